package dev.turnstream.bench;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.ValueMapper;

/**
 * The Kafka Streams peer of {@code turnstream bench kstreams}: an exactly-once (EOS v2), one-thread
 * passthrough of Avro records in the Confluent wire format (magic byte 0, 4-byte schema id, Avro
 * binary). Each record is decoded with a GenericDatumReader and encoded again with a
 * GenericDatumWriter behind the same wire header, as turnstream's runtime passthrough does.
 *
 * <pre>
 * java -cp 'target/classes:target/libs/*' dev.turnstream.bench.KStreamsPassthrough \
 *   --bootstrap 127.0.0.1:9092 --input TOPIC --schema schemas/avsc/turnstream.turns.v1.avsc \
 *   --records N [--state-dir DIR] [--timeout-s 600]
 * </pre>
 *
 * Then one run per line on stdin, {@code <application.id> <output topic>}: a fresh KafkaStreams
 * instance reads the input topic from the beginning, and a read_committed consumer in this JVM
 * reads the output topic until N records are visible. One JSON line per run on stdout:
 * records, seconds and msgs/s from the first record consumed to the last committed output
 * record seen. The JVM stays up between runs, so the first run warms it. EOF ends the process.
 */
public final class KStreamsPassthrough {
  /** After the N-th record, how long the output is still read to catch extra records. */
  private static final Duration SETTLE = Duration.ofSeconds(1);

  private final String bootstrap;
  private final String input;
  private final Schema schema;
  private final long records;
  private final File stateDir;
  private final Duration timeout;

  private KStreamsPassthrough(String bootstrap, String input, Schema schema, long records, File stateDir, Duration timeout) {
    this.bootstrap = bootstrap;
    this.input = input;
    this.schema = schema;
    this.records = records;
    this.stateDir = stateDir;
    this.timeout = timeout;
  }

  public static void main(String[] argv) throws Exception {
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
    Map<String, String> args = parseArgs(argv);
    Schema schema = new Schema.Parser().parse(new File(required(args, "schema")));
    File stateDir = args.containsKey("state-dir")
        ? new File(args.get("state-dir"))
        : Files.createTempDirectory("kstreams-bench-").toFile();
    KStreamsPassthrough bench = new KStreamsPassthrough(
        required(args, "bootstrap"),
        required(args, "input"),
        schema,
        Long.parseLong(required(args, "records")),
        stateDir,
        Duration.ofSeconds(Long.parseLong(args.getOrDefault("timeout-s", "600"))));
    BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line = stdin.readLine(); line != null; line = stdin.readLine()) {
      String[] parts = line.trim().split("\\s+");
      if (parts.length == 1 && parts[0].isEmpty()) continue;
      if (parts.length != 2) throw new IllegalArgumentException("expected '<application.id> <output topic>', got: " + line);
      System.out.println(bench.run(parts[0], parts[1]));
      System.out.flush();
    }
  }

  private static Map<String, String> parseArgs(String[] argv) {
    Map<String, String> out = new java.util.HashMap<>();
    for (int i = 0; i < argv.length; i++) {
      if (!argv[i].startsWith("--") || i + 1 >= argv.length) throw new IllegalArgumentException("expected --name value, got " + argv[i]);
      out.put(argv[i].substring(2), argv[++i]);
    }
    return out;
  }

  private static String required(Map<String, String> args, String name) {
    String v = args.get(name);
    if (v == null) throw new IllegalArgumentException("--" + name + " is required");
    return v;
  }

  /** Decodes a wire-format record and encodes it again behind the same header. One stream thread: no sharing. */
  private static final class Reencode implements ValueMapper<byte[], byte[]> {
    private final GenericDatumReader<GenericRecord> reader;
    private final GenericDatumWriter<GenericRecord> writer;
    private final ByteArrayOutputStream out = new ByteArrayOutputStream(2048);
    private BinaryDecoder decoder;
    private BinaryEncoder encoder;
    private GenericRecord reuse;
    /** Epoch microseconds of the first record, 0 until then. */
    volatile long firstAtMicros;

    Reencode(Schema schema) {
      reader = new GenericDatumReader<>(schema);
      writer = new GenericDatumWriter<>(schema);
    }

    @Override
    public byte[] apply(byte[] value) {
      if (firstAtMicros == 0) firstAtMicros = nowMicros();
      if (value == null || value.length < 5 || value[0] != 0) throw new IllegalStateException("not a Confluent wire-format Avro record");
      try {
        decoder = DecoderFactory.get().binaryDecoder(value, 5, value.length - 5, decoder);
        reuse = reader.read(reuse, decoder);
        out.reset();
        out.write(value, 0, 5);
        encoder = EncoderFactory.get().binaryEncoder(out, encoder);
        writer.write(reuse, encoder);
        encoder.flush();
        return out.toByteArray();
      } catch (IOException e) {
        throw new IllegalStateException("Avro decode/encode failed", e);
      }
    }
  }

  private static long nowMicros() {
    Instant t = Instant.now();
    return t.getEpochSecond() * 1_000_000L + t.getNano() / 1_000L;
  }

  /** One measured run with a fresh application.id writing to {@code output}; its JSON line. */
  private String run(String applicationId, String output) throws Exception {
    ensureOutputTopic(output);
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
    props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.getAbsolutePath());
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");

    Reencode reencode = new Reencode(schema);
    StreamsBuilder builder = new StreamsBuilder();
    builder.stream(input, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
        .mapValues(reencode)
        .to(output, Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));

    KafkaStreams streams = new KafkaStreams(builder.build(), props);
    final Throwable[] failure = new Throwable[1];
    streams.setUncaughtExceptionHandler(e -> {
      failure[0] = e;
      return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
    });
    try (KafkaConsumer<byte[], byte[]> watcher = watcher(output)) {
      streams.start();
      long seen = 0;
      long lastAtMicros = 0;
      long deadline = System.nanoTime() + timeout.toNanos();
      long settleUntil = Long.MAX_VALUE;
      while (System.nanoTime() < settleUntil) {
        if (failure[0] != null) throw new IllegalStateException("Kafka Streams failed", failure[0]);
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("only " + seen + " of " + records + " records on " + output + " after " + timeout.toSeconds() + " s");
        }
        ConsumerRecords<byte[], byte[]> batch = watcher.poll(Duration.ofMillis(20));
        if (!batch.isEmpty()) {
          seen += batch.count();
          if (seen <= records) lastAtMicros = nowMicros();
        }
        if (seen >= records && settleUntil == Long.MAX_VALUE) settleUntil = System.nanoTime() + SETTLE.toNanos();
      }
      double seconds = (lastAtMicros - reencode.firstAtMicros) / 1e6;
      return String.format(
          Locale.ROOT,
          "{\"application_id\":\"%s\",\"output\":\"%s\",\"records\":%d,\"seconds\":%.6f,\"msgs_per_s\":%.1f,"
              + "\"first_consumed_at_ms\":%.3f,\"last_committed_at_ms\":%.3f,\"kafka_streams_version\":\"%s\"}",
          applicationId, output, seen, seconds, records / seconds,
          reencode.firstAtMicros / 1e3, lastAtMicros / 1e3, AppInfoParser.getVersion());
    } finally {
      streams.close(Duration.ofSeconds(30));
      streams.cleanUp();
      leaveGroup(applicationId);
    }
  }

  /** A group-less read_committed consumer of every partition of {@code topic}, from the beginning. */
  private KafkaConsumer<byte[], byte[]> watcher(String topic) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 20);
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    List<TopicPartition> parts = new ArrayList<>();
    consumer.partitionsFor(topic).forEach(p -> parts.add(new TopicPartition(topic, p.partition())));
    consumer.assign(parts);
    consumer.seekToBeginning(parts);
    return consumer;
  }

  /**
   * Removes the closed instance's member from its group: a Streams consumer does not leave on
   * close (it expects to come back), and a group with a member cannot be deleted.
   */
  private void leaveGroup(String applicationId) throws InterruptedException, ExecutionException {
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    try (Admin admin = Admin.create(props)) {
      admin.removeMembersFromConsumerGroup(applicationId, new RemoveMembersFromConsumerGroupOptions()).all().get();
    } catch (ExecutionException e) {
      // Already empty: nothing to remove.
      if (!(e.getCause() instanceof org.apache.kafka.common.errors.UnknownMemberIdException)) throw e;
    }
  }

  /** Creates {@code topic} with the input's partition count unless it exists. */
  private void ensureOutputTopic(String topic) throws InterruptedException, ExecutionException {
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    try (Admin admin = Admin.create(props)) {
      int partitions = admin.describeTopics(Set.of(input)).allTopicNames().get().get(input).partitions().size();
      try {
        admin.createTopics(Set.of(new NewTopic(topic, partitions, (short) 1))).all().get();
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof TopicExistsException)) throw e;
      }
    }
  }
}
