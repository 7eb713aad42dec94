package dev.pekkordma.architecture;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * One simple name per class in the library's main code and the samples, nested classes, records
 * and enums included (a nested class by the last part of its name): a name found twice makes a
 * reader, a stack trace and an import ask which one.
 */
class NamesTest {
  private static final JavaClasses CLASSES = new ClassFileImporter()
      .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
      .importPackages("dev.pekkordma");

  /**
   * The one exemption: an actor's protocol, in Pekko Typed's style. Its {@code Command},
   * {@code Event} and {@code State} types, and the messages implementing its {@code Command} or
   * {@code Event}, are always written with the actor's name ({@code ListenerActor.Bound},
   * {@code DatagramEndpoint.Bound}), and the public actors' protocols are API: renaming them
   * apart would only say the actor's name twice.
   */
  static boolean isActorProtocol(JavaClass c) {
    if (c.getEnclosingClass().isEmpty()) return false;
    String name = c.getSimpleName();
    if (name.equals("Command") || name.equals("Event") || name.equals("State")) return true;
    for (JavaClass o = c.getEnclosingClass().get(); o != null;
        o = o.getEnclosingClass().orElse(null)) {
      if (c.isAssignableTo(o.getName() + "$Command") || c.isAssignableTo(o.getName() + "$Event")) {
        return true;
      }
    }
    return false;
  }

  /** Simple names with the classes that share them; compiler-made classes have none of their own. */
  static Map<String, Set<String>> sharedNames(JavaClasses classes) {
    Map<String, Set<String>> byName = new TreeMap<>();
    for (JavaClass c : classes) {
      if (c.isAnonymousClass() || c.getModifiers().contains(JavaModifier.SYNTHETIC)
          || isActorProtocol(c)) {
        continue;
      }
      byName.computeIfAbsent(c.getSimpleName(), n -> new TreeSet<>()).add(c.getName());
    }
    byName.values().removeIf(s -> s.size() == 1);
    return byName;
  }

  @Test
  void noTwoClassesShareASimpleName() {
    assertEquals(Map.of(), sharedNames(CLASSES), "simple names shared by classes");
  }

  @Test
  void theRuleSeesNestedClassesAndTheExemptionIsAnActorsProtocolAlone() {
    // two nested classes of one name in this test's own classes: found
    JavaClasses mine = new ClassFileImporter().importClasses(Twins.A.Same.class,
        Twins.B.Same.class, Twins.Actor.Command.class, Twins.Actor.Go.class,
        Twins.Other.Go.class);
    assertEquals(Map.of("Same", Set.of(Twins.A.Same.class.getName(),
        Twins.B.Same.class.getName())), sharedNames(mine));
  }

  /** Fixtures for the rule: names shared on purpose. */
  static final class Twins {
    static final class A {
      static final class Same {}
    }

    static final class B {
      static final class Same {}
    }

    /** Go is the actor's message; Other's Go stands alone once the actor's is exempt. */
    static final class Actor {
      interface Command {}

      record Go() implements Command {}
    }

    static final class Other {
      record Go() {}
    }
  }
}
