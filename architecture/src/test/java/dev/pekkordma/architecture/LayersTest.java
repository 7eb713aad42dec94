package dev.pekkordma.architecture;

import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import org.junit.jupiter.api.Test;

/** The layers of ARCHITECTURE.md: each uses only the ones below it, and no package cycles. */
class LayersTest {
  @Test
  void eachLayerUsesOnlyTheOnesBelowIt() {
    layeredArchitecture().consideringOnlyDependenciesInLayers()
        .layer("core").definedBy("dev.pekkordma.verbs..", "dev.pekkordma.cm..",
            "dev.pekkordma.memory..", "dev.pekkordma.config..", "dev.pekkordma.annotation..",
            "dev.pekkordma.soft..")
        .layer("native").definedBy("dev.pekkordma.nativeverbs..")
        .layer("runtime").definedBy("dev.pekkordma.runtime..")
        .layer("actors").definedBy("dev.pekkordma.actors..")
        .layer("streams").definedBy("dev.pekkordma.streams..")
        .layer("cluster").definedBy("dev.pekkordma.cluster..")
        .layer("micrometer").definedBy("dev.pekkordma.micrometer..")
        .whereLayer("micrometer").mayNotBeAccessedByAnyLayer()
        .whereLayer("cluster").mayNotBeAccessedByAnyLayer()
        .whereLayer("actors").mayOnlyBeAccessedByLayers("cluster")
        .whereLayer("streams").mayOnlyBeAccessedByLayers("cluster", "micrometer")
        .whereLayer("runtime").mayOnlyBeAccessedByLayers("actors", "streams", "cluster",
            "micrometer")
        .whereLayer("native").mayNotBeAccessedByAnyLayer()
        .check(Library.CLASSES);
  }

  @Test
  void streamsAndActorsAreSiblingsThatNeverUseEachOther() {
    noClasses().that().resideInAPackage("dev.pekkordma.streams..")
        .should().dependOnClassesThat().resideInAPackage("dev.pekkordma.actors..")
        .check(Library.CLASSES);
    noClasses().that().resideInAPackage("dev.pekkordma.actors..")
        .should().dependOnClassesThat().resideInAPackage("dev.pekkordma.streams..")
        .check(Library.CLASSES);
  }

  @Test
  void providersAreReachedThroughTheApiAlone() {
    noClasses().that().resideOutsideOfPackages("dev.pekkordma.soft..")
        .should().dependOnClassesThat().resideInAPackage("dev.pekkordma.soft..")
        .check(Library.CLASSES);
    noClasses().that().resideOutsideOfPackages("dev.pekkordma.nativeverbs..")
        .should().dependOnClassesThat().resideInAPackage("dev.pekkordma.nativeverbs..")
        .check(Library.CLASSES);
  }

  /**
   * No cycles between packages but two kinds, both named here. A provider serves the verbs and
   * the CM alike (as libibverbs and librdmacm come together), so {@code RdmaProvider} makes the
   * CM's event channels while the CM's ids hand out verbs objects. And a facade's internal
   * package uses the facade's own API types (its settings, the runtime it serves) while the
   * facade builds on it.
   */
  @Test
  void noPackageCycles() {
    slices().matching("dev.pekkordma.(**)").should().beFreeOfCycles()
        .ignoreDependency(DescribedPredicate.describe("the provider (and the chosen one)",
                (JavaClass c) -> c.getPackageName().equals("dev.pekkordma.verbs")
                    && c.isAssignableTo("dev.pekkordma.verbs.RdmaProvider")),
            resideInAPackage("dev.pekkordma.cm"))
        .ignoreDependency(resideInAPackage("dev.pekkordma.runtime.internal.."),
            resideInAPackage("dev.pekkordma.runtime"))
        .ignoreDependency(resideInAPackage("dev.pekkordma.streams.impl.."),
            resideInAPackage("dev.pekkordma.streams"))
        .check(Library.CLASSES);
  }
}
