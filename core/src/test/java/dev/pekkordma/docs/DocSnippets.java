package dev.pekkordma.docs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The code blocks of the docs and the tagged regions of the test sources ({@code // tag::name[]}
 * to {@code // end::name[]}), both normalized (common indentation and trailing blanks removed),
 * so that a block can be checked to be exactly code that compiles.
 */
final class DocSnippets {
  private static final Pattern TAG = Pattern.compile("^\\s*// tag::([\\w.-]+)\\[]\\s*$");
  private static final Pattern END = Pattern.compile("^\\s*// end::([\\w.-]+)\\[]\\s*$");

  private DocSnippets() {}

  /** A fenced block of {@code file}, starting at {@code line} (1-based, the fence's line). */
  record Block(Path file, int line, String text) {
    @Override
    public String toString() {
      String first = text.lines().findFirst().orElse("");
      return file + ":" + line + " (" + first + ")";
    }
  }

  /** The project's root: the directory above the module Maven runs the tests in. */
  static Path root() {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !(Files.exists(dir.resolve("README.md")) && Files.isDirectory(
        dir.resolve("docs")))) {
      dir = dir.getParent();
    }
    if (dir == null) throw new IllegalStateException("no README.md and docs/ above the tests");
    return dir;
  }

  /** README.md, ARCHITECTURE.md, each module's README.md and docs/*.md. */
  static List<Path> pages(Path root) {
    List<Path> pages = new ArrayList<>();
    for (String top : List.of("README.md", "ARCHITECTURE.md")) {
      if (Files.exists(root.resolve(top))) pages.add(root.resolve(top));
    }
    try (Stream<Path> docs = Files.list(root.resolve("docs"));
        Stream<Path> modules = Files.list(root)) {
      docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
      modules.map(m -> m.resolve("README.md")).filter(Files::exists).sorted().forEach(pages::add);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return pages;
  }

  /** Every module's test sources. */
  static List<Path> testSources(Path root) {
    try (Stream<Path> modules = Files.list(root)) {
      List<Path> sources = new ArrayList<>();
      for (Path m : modules.sorted().toList()) {
        Path tests = m.resolve("src/test/java");
        if (!Files.isDirectory(tests)) continue;
        try (Stream<Path> files = Files.walk(tests)) {
          files.filter(p -> p.toString().endsWith(".java")).sorted().forEach(sources::add);
        }
      }
      return sources;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The blocks fenced as {@code ```lang} in {@code page}. */
  static List<Block> blocks(Path page, String lang) {
    List<String> lines = read(page);
    List<Block> blocks = new ArrayList<>();
    for (int i = 0; i < lines.size(); i++) {
      if (!lines.get(i).strip().equals("```" + lang)) continue;
      int start = i;
      StringBuilder b = new StringBuilder();
      for (i++; i < lines.size() && !lines.get(i).strip().equals("```"); i++) {
        b.append(lines.get(i)).append('\n');
      }
      if (i == lines.size()) {
        throw new IllegalStateException(page + ":" + (start + 1) + ": the block is not closed");
      }
      blocks.add(new Block(page, start + 1, normalize(b.toString())));
    }
    return blocks;
  }

  /**
   * The tagged regions of {@code sources} by name (a region's tag lines are not part of it);
   * a name used twice, or a tag not closed, fails naming the file.
   */
  static Map<String, String> regions(List<Path> sources) {
    Map<String, String> regions = new LinkedHashMap<>();
    for (Path source : sources) {
      List<String> lines = read(source);
      for (int i = 0; i < lines.size(); i++) {
        Matcher tag = TAG.matcher(lines.get(i));
        if (!tag.matches()) continue;
        String name = tag.group(1);
        StringBuilder b = new StringBuilder();
        int start = i;
        for (i++; i < lines.size(); i++) {
          Matcher end = END.matcher(lines.get(i));
          if (end.matches() && end.group(1).equals(name)) break;
          b.append(lines.get(i)).append('\n');
        }
        if (i == lines.size()) {
          throw new IllegalStateException(source + ":" + (start + 1) + ": tag::" + name
              + "[] has no end::" + name + "[]");
        }
        if (regions.put(name, normalize(b.toString())) != null) {
          throw new IllegalStateException(source + ": the region name '" + name
              + "' is used twice");
        }
      }
    }
    return regions;
  }

  /** The blocks that are not exactly one of {@code regions}. */
  static List<Block> untagged(List<Block> blocks, Map<String, String> regions) {
    List<Block> out = new ArrayList<>();
    for (Block b : blocks) if (!regions.containsValue(b.text())) out.add(b);
    return out;
  }

  /** Without the indentation all its lines share, trailing blanks, and blank first/last lines. */
  static String normalize(String text) {
    List<String> lines = new ArrayList<>(text.lines().map(String::stripTrailing).toList());
    while (!lines.isEmpty() && lines.get(0).isEmpty()) lines.remove(0);
    while (!lines.isEmpty() && lines.get(lines.size() - 1).isEmpty()) lines.remove(lines.size() - 1);
    int indent = Integer.MAX_VALUE;
    for (String l : lines) {
      if (!l.isEmpty()) indent = Math.min(indent, l.length() - l.stripLeading().length());
    }
    StringBuilder b = new StringBuilder();
    for (String l : lines) b.append(l.isEmpty() ? l : l.substring(indent)).append('\n');
    return b.toString();
  }

  private static List<String> read(Path file) {
    try {
      return Files.readAllLines(file);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
