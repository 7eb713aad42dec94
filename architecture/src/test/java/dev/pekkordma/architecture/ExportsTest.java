package dev.pekkordma.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import dev.pekkordma.annotation.InternalApi;
import java.lang.module.ModuleDescriptor;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * What each module exports, and that everything else is marked internal and used only by the
 * modules it is exported to.
 */
class ExportsTest {
  /** Each library module's API: the packages it exports to every module. */
  private static final Map<String, Set<String>> API = Map.of(
      "dev.pekkordma.core", Set.of("dev.pekkordma.verbs", "dev.pekkordma.cm",
          "dev.pekkordma.memory", "dev.pekkordma.config", "dev.pekkordma.annotation",
          "dev.pekkordma.verbs.spi"),
      // jnr-ffi's generated class, in an unnamed module, must reach the C libraries' interfaces
      "dev.pekkordma.nativeverbs", Set.of("dev.pekkordma.nativeverbs.ffi"),
      "dev.pekkordma.runtime", Set.of("dev.pekkordma.runtime"),
      "dev.pekkordma.actors", Set.of("dev.pekkordma.actors", "dev.pekkordma.actors.datagram"),
      "dev.pekkordma.streams", Set.of("dev.pekkordma.streams"),
      "dev.pekkordma.cluster", Set.of("dev.pekkordma.cluster"),
      "dev.pekkordma.micrometer", Set.of("dev.pekkordma.micrometer"));

  @Test
  void eachModuleExportsItsApiAndNothingElseToAll() {
    assertEquals(API.keySet(), Library.MODULES.keySet(), "the library's modules");
    Map<String, Set<String>> exported = new TreeMap<>();
    for (ModuleDescriptor d : Library.MODULES.values()) {
      exported.put(d.name(), d.exports().stream().filter(e -> !e.isQualified())
          .map(ModuleDescriptor.Exports::source).collect(Collectors.toCollection(TreeSet::new)));
    }
    Map<String, Set<String>> expected = new TreeMap<>();
    API.forEach((m, p) -> expected.put(m, new TreeSet<>(p)));
    assertEquals(expected, exported);
  }

  private static final DescribedPredicate<JavaClass> OUTSIDE_THE_API =
      new DescribedPredicate<>("in a package its module does not export to all") {
        @Override
        public boolean test(JavaClass c) {
          ModuleDescriptor m = Library.moduleOf(c.getPackageName());
          return m != null && !Library.exportedToAll(m, c.getPackageName());
        }
      };

  @Test
  void everyPublicClassOutsideTheApiIsMarkedInternal() {
    classes().that(OUTSIDE_THE_API).and().areTopLevelClasses()
        .and().haveModifier(JavaModifier.PUBLIC)
        .should().beAnnotatedWith(InternalApi.class)
        .check(Library.CLASSES);
  }

  @Test
  void internalPackagesAreUsedOnlyByTheModulesTheyAreExportedTo() {
    classes().should(new ArchCondition<JavaClass>("use only packages exported to their module") {
      @Override
      public void check(JavaClass c, ConditionEvents events) {
        ModuleDescriptor user = Library.moduleOf(c.getPackageName());
        if (user == null) return;
        for (Dependency d : c.getDirectDependenciesFromSelf()) {
          String pkg = d.getTargetClass().getBaseComponentType().getPackageName();
          ModuleDescriptor owner = Library.moduleOf(pkg);
          if (owner != null && !Library.readableFrom(owner, pkg, user)) {
            events.add(SimpleConditionEvent.violated(d, d.getDescription() + ": "
                + owner.name() + " does not export " + pkg + " to " + user.name()));
          }
        }
      }
    }).check(Library.CLASSES);
  }

  @Test
  void theRuntimesInternalsAreUsedByItsFacadesAlone() {
    noClasses().that().resideOutsideOfPackages("dev.pekkordma.runtime..",
            "dev.pekkordma.actors..", "dev.pekkordma.streams..")
        .should().dependOnClassesThat().resideInAPackage("dev.pekkordma.runtime.internal..")
        .check(Library.CLASSES);
  }
}
