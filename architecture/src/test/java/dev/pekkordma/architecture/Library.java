package dev.pekkordma.architecture;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.module.ModuleDescriptor;
import java.net.URL;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * The library modules' main classes and module descriptors, read once from the class path (the
 * samples, there for {@link NamesTest}, are no part of the library).
 */
final class Library {
  /** The library's JPMS modules, each by its name. */
  static final Map<String, ModuleDescriptor> MODULES = readModules();
  static final JavaClasses CLASSES = new ClassFileImporter()
      .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
      .withImportOption(location -> !location.contains("/dev/pekkordma/samples/"))
      .importPackages("dev.pekkordma");

  private Library() {}

  private static final Map<String, ModuleDescriptor> BY_PACKAGE = new HashMap<>();

  static {
    for (ModuleDescriptor d : MODULES.values()) {
      for (String p : d.packages()) BY_PACKAGE.put(p, d);
    }
  }

  /** The library module whose package holds {@code packageName}; null for none. */
  static ModuleDescriptor moduleOf(String packageName) {
    return BY_PACKAGE.get(packageName);
  }

  /** Whether {@code d} exports {@code packageName} to every module (the API). */
  static boolean exportedToAll(ModuleDescriptor d, String packageName) {
    return d.exports().stream()
        .anyMatch(e -> e.source().equals(packageName) && !e.isQualified());
  }

  /** Whether a class of module {@code user} may use one of {@code packageName} in {@code d}. */
  static boolean readableFrom(ModuleDescriptor d, String packageName, ModuleDescriptor user) {
    return d.equals(user) || d.exports().stream().anyMatch(e -> e.source().equals(packageName)
        && (!e.isQualified() || e.targets().contains(user.name())));
  }

  private static Map<String, ModuleDescriptor> readModules() {
    Map<String, ModuleDescriptor> modules = new TreeMap<>();
    try {
      for (URL url : Collections.list(
          Library.class.getClassLoader().getResources("module-info.class"))) {
        try (InputStream in = url.openStream()) {
          ModuleDescriptor d = ModuleDescriptor.read(in);
          if (d.name().startsWith("dev.pekkordma.")) modules.put(d.name(), d);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return modules;
  }
}
