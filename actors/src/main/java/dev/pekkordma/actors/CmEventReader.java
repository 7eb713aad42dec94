package dev.pekkordma.actors;

import dev.pekkordma.cm.CmEvent;
import java.time.Duration;
import org.apache.pekko.actor.DeadLetterSuppression;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Reads the CM event channel on the pinned poller dispatcher (it blocks in awaitEvent) and hands
 * each event to its id's owner. One event or one block-timeout per message to itself.
 */
final class CmEventReader {
  /** Internal; one may reach the reader after it stopped, which is no news. */
  enum Read implements DeadLetterSuppression { INSTANCE }

  private CmEventReader() {}

  static Behavior<Read> create(CmRouter router, Duration blockTimeout) {
    return Behaviors.setup(ctx -> {
      ctx.getSelf().tell(Read.INSTANCE);
      return Behaviors.receiveMessage(r -> {
        CmEvent e = router.channel.awaitEvent(blockTimeout);
        if (e != null) router.route(e, ctx.getLog());
        ctx.getSelf().tell(Read.INSTANCE);
        return Behaviors.same();
      });
    });
  }
}
