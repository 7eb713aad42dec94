package dev.pekkordma.soft.cm;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The other process of {@link SoftCmTlsTest}: a software provider configured by its first
 * argument (HOCON, the TLS settings), listening on 127.0.0.1. It prints {@code LISTENING port},
 * accepts as many connections as its second argument says, each with private data
 * {@code served N}, waits for the client to disconnect and prints {@code SERVED N}, then
 * {@code PEER OK}. Its log (refusals included) goes to its output.
 */
public final class TlsCmPeerMain {
  private static final Duration T = Duration.ofSeconds(30);

  private TlsCmPeerMain() {}

  public static void main(String[] args) {
    Thread watchdog = new Thread(() -> {
      try {
        Thread.sleep(90_000);
        System.out.println("PEER TIMEOUT");
        System.out.flush();
        Runtime.getRuntime().halt(3);
      } catch (InterruptedException e) {
        // done in time
      }
    }, "peer-watchdog");
    watchdog.setDaemon(true);
    watchdog.start();
    try {
      run(args[0], Integer.parseInt(args[1]));
      System.out.println("PEER OK");
      System.out.flush();
      System.exit(0);
    } catch (Throwable t) {
      System.out.println("PEER FAIL " + t);
      t.printStackTrace(System.out);
      System.out.flush();
      System.exit(1);
    }
  }

  private static void run(String config, int connections) {
    try (RdmaProvider provider = RdmaProviders.load(ConfigFactory.parseString(config
        + "\npekko-rdma.provider = soft").withFallback(ConfigFactory.load()))) {
      CmEventChannel ch = provider.createCmEventChannel();
      CmId listener = ch.createId("tls-peer");
      listener.bind(new InetSocketAddress("127.0.0.1", 0));
      listener.listen(4);
      System.out.println("LISTENING " + listener.localAddress().getPort());
      System.out.flush();
      for (int n = 1; n <= connections; n++) {
        CmId id = await(ch, CmEventType.CONNECT_REQUEST).id();
        id.accept(ConnectionParameters.withPrivateData(
            ("served " + n).getBytes(StandardCharsets.US_ASCII)));
        await(ch, CmEventType.ESTABLISHED);
        await(ch, CmEventType.DISCONNECTED);
        id.close();
        System.out.println("SERVED " + n);
        System.out.flush();
      }
      listener.close();
      ch.close();
    }
  }

  private static CmEvent await(CmEventChannel ch, CmEventType type) {
    CmEvent e = ch.awaitEvent(T);
    if (e == null || e.type() != type) {
      throw new IllegalStateException("expected " + type + " within " + T + ", got " + e);
    }
    return e;
  }
}
