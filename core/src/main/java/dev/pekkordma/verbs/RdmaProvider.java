package dev.pekkordma.verbs;

import dev.pekkordma.cm.CmEventChannel;
import java.util.List;
import java.util.Optional;

/**
 * One implementation of the verbs: the embedded software provider or the native one. Obtain it
 * from {@link RdmaProviders}; closing it closes everything it opened.
 */
public interface RdmaProvider extends AutoCloseable {
  /** "soft" or "native". */
  String name();

  /** The device list ({@code ibv_get_device_list}). */
  List<RdmaDevice> devices();

  /** Opens a device ({@code ibv_open_device}). */
  DeviceContext open(RdmaDevice device);

  /** Opens the device of that name, or fails listing the names there are. */
  default DeviceContext open(String deviceName) {
    for (RdmaDevice d : devices()) {
      if (d.name().equals(deviceName)) return open(d);
    }
    throw new RdmaException("ibv_open_device", RdmaException.ENODEV,
        "no device named '" + deviceName + "'; devices: " + devices());
  }

  /**
   * The counters of each port of {@code device}, port 1 first, read without opening it (on
   * Linux from sysfs); empty for a device this provider does not have.
   */
  List<PortCounters> portCounters(RdmaDevice device);

  /** A connection manager event channel ({@code rdma_create_event_channel}). */
  CmEventChannel createCmEventChannel();

  /**
   * This provider as {@code type} (an extension it offers, such as fault injection), or the
   * provider it serves through as one (the provider {@link RdmaProviders} chose wraps it).
   */
  default <T> Optional<T> unwrap(Class<T> type) {
    return type.isInstance(this) ? Optional.of(type.cast(this)) : Optional.empty();
  }

  /** What this provider can do; the conformance suite skips, with the reason, what it cannot. */
  boolean supports(Feature feature);

  /** Live resources opened through this provider. */
  ResourceCounts liveResources();

  @Override
  void close();

  /**
   * Optional capabilities, and device behaviours the IB specification asks for that some devices
   * lack (Soft-RoCE, say): a provider answers those by a small experiment on the device, the
   * software provider has them all. Each says what it means, for the reason a skip prints.
   */
  enum Feature {
    UD, UC, SRQ, MEMORY_WINDOW_TYPE_1, MEMORY_WINDOW_TYPE_2, ATOMICS, CQ_RESIZE, REREGISTER_MR,
    CONNECTION_MANAGER,
    COMM_EST_EVENT("raises COMM_EST when a QP in RTR receives its first packet"),
    QP_ACCESS_ERR_EVENT("raises QP_ACCESS_ERR on the responder of a remote access violation"),
    LAST_WQE_REACHED_EVENT("raises QP_LAST_WQE_REACHED when a QP on an SRQ goes to ERR"),
    SQ_DRAINED_ONLY_ON_REQUEST("raises SQ_DRAINED only when RTS -> SQD asked for it"),
    SQD_RESUMES_POSTED_WORK("starts, after SQD -> RTS, the requests posted while in SQD"),
    WORK_QUEUE_LIMITS("refuses a post beyond the QP's reported maxSendWr / maxRecvWr"),
    CQ_OVERRUN_ERROR("fails a poll of a CQ that overran"),
    LOCAL_ERROR_STATUSES("completes local protection / length errors as LOC_PROT_ERR / LOC_LEN_ERR"),
    FLUSHES_RECV_POSTED_IN_ERR("flushes a receive posted on a QP in ERR"),
    MEMORY_WINDOW_BOUNDS("refuses remote access across the end of a memory window"),
    WC_WITH_INV_FLAG("sets WITH_INV on the receive completion of a SEND_WITH_INV");

    private final String meaning;

    Feature() {
      this.meaning = null;
    }

    Feature(String meaning) {
      this.meaning = meaning;
    }

    /** What a device-behaviour capability means, or null for an optional feature. */
    public String meaning() {
      return meaning;
    }

    /** Whether this is a device behaviour (answered by an experiment), not an optional feature. */
    public boolean isBehaviour() {
      return meaning != null;
    }
  }
}
