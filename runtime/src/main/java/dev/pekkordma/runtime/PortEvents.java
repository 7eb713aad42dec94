package dev.pekkordma.runtime;

import dev.pekkordma.verbs.PortCounters;
import jdk.jfr.Category;
import jdk.jfr.Event;
import jdk.jfr.FlightRecorder;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.Period;
import jdk.jfr.StackTrace;

/**
 * A JDK Flight Recorder event per port in use, every period a recording asks for: the port's
 * counters since the device came up ({@link PortCounters#NOT_COUNTED} where the device keeps
 * none).
 */
@Name("dev.pekkordma.runtime.PortCounters")
@Label("RDMA Port Counters")
@Category({"pekko-rdma", "Runtime"})
@Period("1 s")
@StackTrace(false)
final class PortEvents extends Event {
  @Label("Device") String device;
  @Label("Port") int port;
  @Label("Packets Sent") long packetsSent;
  @Label("Packets Received") long packetsReceived;
  @Label("RNR NAKs Received") long rnrNaksReceived;
  @Label("RNR NAKs Sent") long rnrNaksSent;
  @Label("Retries") long retries;
  @Label("Retries Exceeded") long retriesExceeded;
  @Label("RNR Retries Exceeded") long rnrRetriesExceeded;

  /** Records the runtime's ports while a recording wants them, until the returned stop runs. */
  static Runnable register(RdmaRuntime runtime) {
    Runnable emit = () -> {
      for (PortMetrics p : runtime.ports()) {
        PortEvents e = new PortEvents();
        PortCounters c = p.counters();
        e.device = p.device();
        e.port = p.port();
        e.packetsSent = c.packetsSent();
        e.packetsReceived = c.packetsReceived();
        e.rnrNaksReceived = c.rnrNaksReceived();
        e.rnrNaksSent = c.rnrNaksSent();
        e.retries = c.retries();
        e.retriesExceeded = c.retriesExceeded();
        e.rnrRetriesExceeded = c.rnrRetriesExceeded();
        e.commit();
      }
    };
    FlightRecorder.addPeriodicEvent(PortEvents.class, emit);
    return () -> FlightRecorder.removePeriodicEvent(emit);
  }
}
