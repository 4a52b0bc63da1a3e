import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.image.MetadataDelta;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.loader.LoaderManifest;
import org.apache.kafka.image.loader.MetadataLoader;
import org.apache.kafka.image.publisher.MetadataPublisher;
import org.apache.kafka.metadata.util.SnapshotFileReader;
import org.apache.kafka.server.config.DefaultSupportedConfigChecker;
import org.apache.kafka.server.fault.LoggingFaultHandler;
import org.apache.kafka.shell.command.Commands;
import org.apache.kafka.shell.state.MetadataShellPublisher;
import org.apache.kafka.shell.state.MetadataShellState;

/**
 * Runs Kafka's metadata shell commands on a metadata log segment or a .checkpoint once the
 * shell holds the image of the whole file.
 *
 * Kafka's own command line (org.apache.kafka.shell.MetadataShell) runs its command as soon as
 * the loader has applied any offset, and its publisher is first handed the image on a loader
 * event deferred by up to 100 ms, so a command can run on an empty or partial tree. This
 * launcher builds the same loader, file reader, publisher and commands, and runs the commands
 * only after the publisher received the image at the file's last data offset.
 *
 * Usage: java -cp SHELL_JARS LoadedShell.java FILE   (commands on stdin, one per line; each
 * command's output is followed by a line holding END_MARKER)
 */
public final class LoadedShell {
    static final String END_MARKER = "--- end of command ---";
    static final long LOAD_TIMEOUT_MS = 60_000;

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: LoadedShell FILE (commands on stdin)");
            System.exit(2);
        }
        String path = args[0];
        long lastDataOffset = lastDataOffset(path);
        if (lastDataOffset < 0) {
            System.err.println(path + " holds no metadata records");
            System.exit(2);
        }
        MetadataShellState state = new MetadataShellState();
        MetadataShellPublisher shell = new MetadataShellPublisher(state);
        AtomicLong published = new AtomicLong(-1);
        MetadataPublisher tracking = new MetadataPublisher() {
            @Override
            public String name() {
                return shell.name();
            }

            @Override
            public void onMetadataUpdate(MetadataDelta delta, MetadataImage image, LoaderManifest manifest) {
                shell.onMetadataUpdate(delta, image, manifest);
                published.set(image.provenance().lastContainedOffset());
            }
        };
        SnapshotFileReader[] reader = new SnapshotFileReader[1];
        MetadataLoader loader = new MetadataLoader.Builder()
            .setFaultHandler(new LoggingFaultHandler("shell", () -> { }))
            .setNodeId(-1)
            .setHighWaterMarkAccessor(() -> reader[0] == null ? OptionalLong.empty() : reader[0].highWaterMark())
            .setSupportedConfigChecker(new DefaultSupportedConfigChecker())
            .build();
        reader[0] = new SnapshotFileReader(path, loader);
        try {
            reader[0].startup();
            loader.installPublishers(List.of(tracking)).get(1, TimeUnit.MINUTES);
            long deadline = System.currentTimeMillis() + LOAD_TIMEOUT_MS;
            while (published.get() < lastDataOffset) {
                if (System.currentTimeMillis() > deadline) {
                    System.err.println("the shell's image reached offset " + published.get() + " of "
                        + lastDataOffset + " in " + path + " within " + LOAD_TIMEOUT_MS + " ms");
                    System.exit(3);
                }
                Thread.sleep(10);
            }
            runCommands(state);
        } finally {
            loader.close();
            reader[0].close();
        }
        System.exit(0);
    }

    /** The last offset of the file's last batch of metadata records (control batches carry none). */
    static long lastDataOffset(String path) throws Exception {
        long last = -1;
        try (FileRecords records = FileRecords.open(new File(path), false)) {
            for (FileChannelRecordBatch batch : records.batches()) {
                if (!batch.isControlBatch()) {
                    last = batch.lastOffset();
                }
            }
        }
        return last;
    }

    static void runCommands(MetadataShellState state) throws Exception {
        Commands commands = new Commands(false);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(System.out, false, StandardCharsets.UTF_8);
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            List<String> words = Arrays.asList(line.trim().split("\\s+"));
            commands.parseCommand(words).run(Optional.empty(), out, state);
            out.println(END_MARKER);
            out.flush();
        }
    }
}
