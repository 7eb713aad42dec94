package dev.pekkordma.samples;

import java.io.PrintStream;
import java.util.Locale;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

/**
 * Shows how far a transfer is. {@link #update} is called from the data path: it must not block or
 * allocate.
 */
public interface Progress extends AutoCloseable {
  /** {@code bytes} so far (acknowledged by the server). */
  void update(long bytes);

  /** Finishes the display (the bar's last state, or nothing). */
  @Override
  void close();

  /** Which display {@code --progress} asked for. */
  enum Display {
    AUTO, BAR, PLAIN, NONE;

    public static Display parse(String s) {
      for (Display k : values()) if (k.name().equalsIgnoreCase(s)) return k;
      throw new IllegalArgumentException("'" + s + "' is not a progress display; use auto, bar,"
          + " plain or none");
    }
  }

  Progress NONE = new Progress() {
    @Override
    public void update(long bytes) {}

    @Override
    public void close() {}
  };

  /**
   * A bar when there is a terminal (or {@code BAR} was asked for), else a plain line at each
   * quarter (or nothing for {@code NONE}).
   */
  static Progress create(Display kind, String task, long total, PrintStream out) {
    Display k = kind;
    if (k == Display.AUTO) k = System.console() != null ? Display.BAR : Display.PLAIN;
    switch (k) {
      case BAR: return new Bar(task, total);
      case PLAIN: return new Plain(task, total, out);
      default: return NONE;
    }
  }

  /** me.tongfei:progressbar on the terminal (stderr), counting MiB. */
  final class Bar implements Progress {
    private final ProgressBar bar;
    private final long total;

    Bar(String task, long total) {
      this.total = total;
      this.bar = new ProgressBarBuilder()
          .setTaskName(task)
          .setInitialMax(total)
          .setUnit(" MiB", 1L << 20)
          .setStyle(ProgressBarStyle.ASCII)
          .setUpdateIntervalMillis(200)
          .build(); // no showSpeed(): 0.10.1 divides by whole elapsed seconds; the summary has it
    }

    @Override
    public void update(long bytes) {
      bar.stepTo(Math.min(bytes, total));
    }

    @Override
    public void close() {
      bar.close();
    }
  }

  /** One line at 25, 50, 75 and 100%: quiet enough for CI logs. */
  final class Plain implements Progress {
    private final String task;
    private final long total;
    private final PrintStream out;
    private final long startNanos = System.nanoTime();
    private int quartersShown;

    Plain(String task, long total, PrintStream out) {
      this.task = task;
      this.total = total;
      this.out = out;
    }

    @Override
    public void update(long bytes) {
      // the data path calls this often: compare first, format only at a new quarter
      if (bytes * 4 < (quartersShown + 1) * total) return;
      int quarters = (int) Math.min(4, bytes * 4 / total);
      quartersShown = quarters;
      double s = (System.nanoTime() - startNanos) / 1e9;
      out.printf(Locale.ROOT, "%s: %3d%% %s in %.1f s%n", task, quarters * 25,
          ByteSize.format(bytes), s);
    }

    @Override
    public void close() {}
  }
}
