package dev.pekkordma.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigResolveOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every code block in the docs is compiled: each {@code ```java} block of README.md and docs/ is
 * exactly (but for indentation) a tagged region of some module's test sources, which the build
 * compiles and, where a test calls it, runs; each {@code ```hocon} block parses and resolves.
 */
class DocSnippetsTest {
  private static final Path ROOT = DocSnippets.root();

  @Test
  void everyJavaBlockIsATaggedRegionOfATestSource() {
    Map<String, String> regions = DocSnippets.regions(DocSnippets.testSources(ROOT));
    List<DocSnippets.Block> blocks = new ArrayList<>();
    for (Path page : DocSnippets.pages(ROOT)) blocks.addAll(DocSnippets.blocks(page, "java"));
    assertFalse(blocks.isEmpty(), "no java block found under " + ROOT);
    List<DocSnippets.Block> untagged = DocSnippets.untagged(blocks, regions);
    assertTrue(untagged.isEmpty(), "java blocks that are no tagged region of a test source"
        + " (put the code in one, between // tag::NAME[] and // end::NAME[]):\n  "
        + String.join("\n  ", untagged.stream().map(Object::toString).toList()));
  }

  @Test
  void everyHoconBlockParses() {
    for (Path page : DocSnippets.pages(ROOT)) {
      for (DocSnippets.Block b : DocSnippets.blocks(page, "hocon")) {
        try {
          // substitutions of the environment (a password, say) may be unset here
          ConfigFactory.parseString(b.text())
              .resolve(ConfigResolveOptions.defaults().setAllowUnresolved(true));
        } catch (ConfigException e) {
          throw new AssertionError(b + ": " + e.getMessage(), e);
        }
      }
    }
  }

  @Test
  void aBlockThatDriftedIsNamedByFileAndLine(@TempDir Path dir) throws IOException {
    Path source = dir.resolve("Example.java");
    Files.writeString(source, "class Example {\n  void f() {\n    // tag::f[]\n    int a = 1;\n"
        + "      a++;\n    // end::f[]\n  }\n}\n");
    Path page = dir.resolve("page.md");
    Files.writeString(page, "text\n\n```java\nint a = 1;\n  a++;\n```\n\n```java\nint a = 2;\n```\n");
    Map<String, String> regions = DocSnippets.regions(List.of(source));
    assertEquals("int a = 1;\n  a++;\n", regions.get("f"));
    List<DocSnippets.Block> untagged = DocSnippets.untagged(DocSnippets.blocks(page, "java"),
        regions);
    assertEquals(1, untagged.size(), untagged.toString());
    assertEquals(page + ":8 (int a = 2;)", untagged.get(0).toString());
  }

  @Test
  void anUnclosedTagFailsNamingIt(@TempDir Path dir) throws IOException {
    Path source = dir.resolve("Open.java");
    Files.writeString(source, "// tag::open[]\nint x;\n");
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> DocSnippets.regions(List.of(source)));
    assertTrue(e.getMessage().contains("tag::open[] has no end::open[]"), e.getMessage());
  }
}
