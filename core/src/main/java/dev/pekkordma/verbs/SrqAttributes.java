package dev.pekkordma.verbs;

/** Shared receive queue sizes ({@code ibv_srq_attr}). */
public record SrqAttributes(int maxWr, int maxSge, int limit) {}
