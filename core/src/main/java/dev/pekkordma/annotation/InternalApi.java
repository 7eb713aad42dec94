package dev.pekkordma.annotation;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a public class, method, constructor or field that is not part of pekko-rdma's API: it is
 * public only so that another pekko-rdma module can use it, and it may change or go in any
 * release without notice. Users on the module path cannot reach it (its package is exported to
 * the pekko-rdma modules that need it, or not at all); users on the class path can, and must not.
 * Architecture tests check that no class outside pekko-rdma's own facades uses one.
 */
@Documented
@Retention(RetentionPolicy.CLASS)
@Target({ElementType.TYPE, ElementType.METHOD, ElementType.CONSTRUCTOR, ElementType.FIELD,
    ElementType.PACKAGE})
public @interface InternalApi {}
