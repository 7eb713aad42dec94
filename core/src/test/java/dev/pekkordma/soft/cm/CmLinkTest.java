package dev.pekkordma.soft.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The CM connections between two processes ride one link: many connections cost neither a thread
 * nor a socket each, each keeps its own port, and a peer that stops reading loses its link
 * without holding anything of ours.
 */
class CmLinkTest extends CmFixture {
  @Test
  void manyConnectionsShareOneLinkAndKeepTheirOwnPorts() {
    CmEventChannel server = channel();
    CmEventChannel client = channel();
    CmId listener = listener(server);
    List<CmId> clients = new ArrayList<>();
    List<CmId> accepted = new ArrayList<>();
    Set<InetSocketAddress> remotes = new HashSet<>();
    connect(10, listener, client, server, clients, accepted, remotes);
    int withTen = softThreads();
    connect(290, listener, client, server, clients, accepted, remotes);
    // at most as many: threads of providers that earlier tests closed may still be ending
    int withThreeHundred = softThreads();
    assertTrue(withThreeHundred <= withTen, "the provider's threads: " + withTen
        + " with ten connections, " + withThreeHundred + " with 300");
    Set<InetSocketAddress> locals = new HashSet<>();
    for (CmId c : clients) locals.add(c.localAddress());
    assertEquals(300, locals.size(), "each connection has a port of its own");
    assertEquals(locals, remotes, "the listener sees each connection's own address");
    assertEquals(1, ((SoftCmId) clients.get(0)).resources.outgoing.size(), "one link");

    for (CmId c : clients) c.disconnect();
    for (CmId c : clients) expect(client, CmEventType.DISCONNECTED);
    for (CmId a : accepted) expect(server, CmEventType.DISCONNECTED);
    for (CmId c : clients) c.close();
    for (CmId a : accepted) a.close();
    listener.close();
  }

  @Test
  void aLinkRunsOnThreadsThatWaitedForIt() {
    CmEventChannel server = channel();
    CmEventChannel client = channel();
    SoftCmId listener = (SoftCmId) listener(server);
    CmResources resources = listener.resources;
    assertEquals(CmResources.READY_THREADS, resources.mostThreads(), "started with the provider");
    List<CmId> clients = new ArrayList<>();
    List<CmId> accepted = new ArrayList<>();
    connect(1, listener, client, server, clients, accepted, new HashSet<>());
    // the link's reader and writer on each side: the four that waited, none started for them
    assertEquals(CmResources.READY_THREADS, resources.mostThreads(), "threads in the pool");
    clients.get(0).disconnect();
    expect(client, CmEventType.DISCONNECTED);
    expect(server, CmEventType.DISCONNECTED);
    clients.get(0).close();
    accepted.get(0).close();
    listener.close();
  }

  @Test
  void theLinkOpensWithTheAddressAndClosesWithAnIdThatNeverConnects() throws Exception {
    CmEventChannel server = channel();
    CmEventChannel client = channel();
    SoftCmId listener = (SoftCmId) listener(server);
    SoftCmId early = resolvedWithItsLink(client, listener);

    early.close(); // resolved, never connected: the link has nothing left to carry
    awaitTrue(() -> early.resources.outgoing.size() == 0, "the link closed with its only id");
    expectNone(server, Duration.ofMillis(200)); // and no request reached the listener

    connectOnceAndEnd(client, server, listener, new byte[0]); // a later id opens a new link
    listener.close();
  }

  @Test
  void anIdThatWaitsPastTheListenersTimeoutConnectsOverANewLink() throws Exception {
    CmEventChannel server = channel();
    CmEventChannel client = channel();
    SoftCmId listener = (SoftCmId) listener(server);
    SoftCmId slow = resolvedWithItsLink(client, listener);
    // no REQ within the connect timeout: the listener closes the link, the id lets it go
    awaitTrue(() -> listener.pendingHandshakes() == 0
        && slow.resources.outgoing.size() == 0, "the listener closed the waiting link");
    expectNone(client, Duration.ofMillis(100)); // resolved and not connecting: nothing to report

    connectAndEnd(slow, client, server, new byte[0]); // over a new link
    listener.close();
  }

  /** A client id resolved towards {@code listener}, once the listener holds the link it opened. */
  private static SoftCmId resolvedWithItsLink(CmEventChannel client, SoftCmId listener)
      throws InterruptedException {
    SoftCmId id = (SoftCmId) resolved(client, listener.localAddress());
    awaitTrue(() -> listener.pendingHandshakes() == 1,
        "the listener accepted the link before any connect");
    assertEquals(1, id.resources.outgoing.size(), "the link the connect will use");
    return id;
  }

  private static void awaitTrue(java.util.function.BooleanSupplier condition, String what)
      throws InterruptedException {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, what);
      Thread.sleep(5);
    }
  }

  private static void connect(int n, CmId listener, CmEventChannel client,
      CmEventChannel server, List<CmId> clients, List<CmId> accepted,
      Set<InetSocketAddress> remotes) {
    for (int i = 0; i < n; i++) {
      CmId c = resolved(client, listener.localAddress());
      c.connect(ConnectionParameters.withPrivateData(new byte[] {(byte) i}));
      clients.add(c);
    }
    for (int i = 0; i < n; i++) {
      CmEvent request = expect(server, CmEventType.CONNECT_REQUEST);
      remotes.add(request.id().remoteAddress());
      request.id().accept(ConnectionParameters.defaults());
      accepted.add(request.id());
    }
    for (int i = 0; i < n; i++) expect(client, CmEventType.ESTABLISHED);
    for (int i = 0; i < n; i++) expect(server, CmEventType.ESTABLISHED);
  }

  private static int softThreads() {
    int n = 0;
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.isAlive() && t.getName().startsWith("soft-")) n++;
    }
    return n;
  }

  @Test
  void aPeerThatStopsReadingIsCutOffAndItsConnectionsEnd() throws Exception {
    CmEventChannel server = channel();
    CmId listener = listener(server);
    try (Socket s = new Socket()) {
      s.setReceiveBufferSize(4096); // so that what it does not read backs up soon
      s.connect(listener.localAddress());
      // REQs on numbers going up, each accepted (a REP each), and not one byte read back
      byte[] req = Frames.validReq();
      int requests = 0;
      List<CmId> ids = new ArrayList<>();
      long deadline = System.nanoTime() + 60_000_000_000L;
      boolean cut = false;
      while (!cut && System.nanoTime() < deadline) {
        for (int i = 0; i < 200; i++) {
          int n = ++requests;
          HostileCmPeerTest.send(s, Frames.frame(Frames.MAGIC, Frames.REQ, n,
              body -> body.write(java.util.Arrays.copyOfRange(req, 13, req.length))));
        }
        CmEvent e;
        while ((e = server.awaitEvent(java.time.Duration.ofMillis(20))) != null) {
          ids.add(e.id());
          if (e.type() == CmEventType.CONNECT_REQUEST) {
            try {
              e.id().accept(ConnectionParameters.withPrivateData(new byte[196]));
            } catch (dev.pekkordma.verbs.RdmaException gone) {
              // the link was cut after this request was queued: its id ended with it
              assertTrue(gone.getMessage().contains("CONNECT_ERROR"), gone.getMessage());
              cut = true;
            }
          } else if (e.type() == CmEventType.CONNECT_ERROR) {
            cut = true;
          }
        }
      }
      assertTrue(cut, "the link is cut once " + CmLink.MAX_QUEUED + " bytes wait for it ("
          + requests + " REQs sent)");
      for (CmId id : new HashSet<>(ids)) {
        if (id != listener) id.close();
      }
      HostileCmPeerTest.awaitClosedByPeer(s);
    }
    listener.close();
  }

  @Test
  void aLinkWhosePeerNeverClosesEndsAfterTheConnectTimeout() throws Exception {
    CmEventChannel client = channel();
    int before = linkThreads();
    try (HostileCmPeerTest.FakeServer fake = new HostileCmPeerTest.FakeServer()) {
      CmId c = resolved(client, fake.address());
      c.connect(ConnectionParameters.defaults());
      try (Socket s = fake.acceptRequest()) {
        HostileCmPeerTest.send(s, Frames.rej(28, new byte[0]));
        expect(client, CmEventType.REJECTED);
        c.close(); // the last conversation: the link closes its end; this peer never does
        long deadline = System.nanoTime() + 3 * CONNECT_TIMEOUT.toNanos() + WAIT.toNanos();
        while (linkThreads() > before && System.nanoTime() < deadline) Thread.sleep(20);
        assertEquals(before, linkThreads(), "the link's threads are gone");
      }
    }
  }

  private static int linkThreads() {
    int n = 0;
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.isAlive() && (t.getName().startsWith("soft-cm-link-")
          || t.getName().startsWith("soft-cm-write-"))) {
        n++;
      }
    }
    return n;
  }
}
