# shellcheck shell=bash
# ---------------------------------------------------------------- Kafka (KRaft: broker and controller in one JVM)
# Sourced by scripts/services. Apache Kafka's jars come from Maven Central (the only route here: no release
# tarball, no Docker), resolved once into $TAPYARD_HOME/kafka/libs; the logging binding is the one Kafka 3.9's
# own distribution ships (slf4j-reload4j), since kafka_2.13's pom names only slf4j-api.
KAFKA_VERSION=3.9.1
KAFKA_PORT="${TAPYARD_KAFKA_PORT:-9092}"
KAFKA_CONTROLLER_PORT="${TAPYARD_KAFKA_CONTROLLER_PORT:-9093}"
# A second client listener that advertises a port the broker does not own: tests put a relay they can
# cut there, so every connection a client makes (bootstrap and partition leaders alike) passes it.
KAFKA_RELAYED_PORT="${TAPYARD_KAFKA_RELAYED_PORT:-9094}"
KAFKA_RELAY_PORT="${TAPYARD_KAFKA_RELAY_PORT:-19094}"
KAFKA_DIR="$TAPYARD_HOME/kafka"
# Bumped when a setting that only applies to a freshly formatted data directory changes.
KAFKA_LAYOUT=internal-topics-1

kafka_java() { java -Dlog4j.configuration="file:$KAFKA_DIR/log4j.properties" -cp "$KAFKA_DIR/libs/*" "$@"; }

kafka_install() {
  [ "$(cat "$KAFKA_DIR/libs/.tapyard-version" 2>/dev/null)" = "$KAFKA_VERSION" ] && return 0
  command -v java >/dev/null || apt_install openjdk-17-jre-headless
  command -v mvn >/dev/null || apt_install maven
  log "resolving kafka $KAFKA_VERSION from Maven Central into $KAFKA_DIR/libs (first run only)"
  mkdir -p "$KAFKA_DIR/build"
  cat >"$KAFKA_DIR/build/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>tapyard.local</groupId>
  <artifactId>kafka-libs</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId><version>1.7.36</version></dependency>
    <dependency><groupId>ch.qos.reload4j</groupId><artifactId>reload4j</artifactId><version>1.2.25</version></dependency>
  </dependencies>
</project>
POM
  rm -rf "$KAFKA_DIR/libs.tmp"
  # Maven 3.8 writes terminal escapes even with -q -B: its output is shown only when it fails.
  (cd "$KAFKA_DIR/build" && mvn -q -B -Dmaven.repo.local="$TAPYARD_HOME/m2" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$KAFKA_DIR/libs.tmp") >"$KAFKA_DIR/build/mvn.log" 2>&1 \
    || { cat "$KAFKA_DIR/build/mvn.log" >&2; die "maven could not resolve kafka $KAFKA_VERSION (see above)"; }
  echo "$KAFKA_VERSION" >"$KAFKA_DIR/libs.tmp/.tapyard-version"
  rm -rf "$KAFKA_DIR/libs" && mv "$KAFKA_DIR/libs.tmp" "$KAFKA_DIR/libs"
}

# Ready means a Kafka broker answers a request (ApiVersions v0, correlation id 1, error 0): an open port alone
# may be another program, or a broker that hangs.
kafka_ready() {
  (exec 3<>"/dev/tcp/127.0.0.1/$KAFKA_PORT" \
    && printf '\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x01\xff\xff' >&3 \
    && timeout 2 head -c 10 <&3 | od -An -tx1 | tr -d ' \n' | grep -q '^........000000010000$') 2>/dev/null
}

kafka_configure() {
  mkdir -p "$KAFKA_DIR/data"
  cat >"$KAFKA_DIR/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT,RELAYED://127.0.0.1:$KAFKA_RELAYED_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,RELAYED://127.0.0.1:$KAFKA_RELAY_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,RELAYED:PLAINTEXT
log.dirs=$KAFKA_DIR/data
num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
# A test broker: one partition for each internal topic (50 by default: 100 partitions the broker keeps
# loaded, checkpointed and, for the offsets topic, compacted, whatever the load), no no-op records
# appended to the metadata log every 500 ms (a single-node quorum has nobody to prove liveness to), and
# threads for two cores.
offsets.topic.num.partitions=1
transaction.state.log.num.partitions=1
metadata.max.idle.interval.ms=0
num.network.threads=2
num.io.threads=2
num.recovery.threads.per.data.dir=1
background.threads=2
log.cleaner.threads=1
PROPS
  cat >"$KAFKA_DIR/log4j.properties" <<'LOG4J'
log4j.rootLogger=WARN, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
# One line when the broker is up, so the log shows each start.
log4j.logger.kafka.server.KafkaRaftServer=INFO
LOG4J
  # The internal topics keep the partition count they were made with: data from a broker of another layout
  # (test topics of earlier runs only: the suites make their own) starts afresh.
  if [ -f "$KAFKA_DIR/data/meta.properties" ] && [ "$(cat "$KAFKA_DIR/data-layout" 2>/dev/null)" != "$KAFKA_LAYOUT" ]; then
    log "kafka: clearing $KAFKA_DIR/data (made with other internal topic settings)"
    rm -rf "$KAFKA_DIR/data" && mkdir -p "$KAFKA_DIR/data"
  fi
  if [ ! -f "$KAFKA_DIR/data/meta.properties" ]; then
    [ -s "$KAFKA_DIR/cluster-id" ] || kafka_java kafka.tools.StorageTool random-uuid >"$KAFKA_DIR/cluster-id"
    log "formatting kafka storage in $KAFKA_DIR/data"
    kafka_java kafka.tools.StorageTool format -t "$(cat "$KAFKA_DIR/cluster-id")" -c "$KAFKA_DIR/server.properties" >&2 \
      || die "formatting kafka storage failed"
    echo "$KAFKA_LAYOUT" >"$KAFKA_DIR/data-layout"
  fi
}

kafka_start() {
  kafka_install
  if kafka_ready; then log "kafka already running on 127.0.0.1:$KAFKA_PORT"; return 0; fi
  kafka_configure
  log "starting kafka $KAFKA_VERSION on 127.0.0.1:$KAFKA_PORT, controller $KAFKA_CONTROLLER_PORT (data in $KAFKA_DIR/data)"
  # shellcheck disable=SC2086 # KAFKA_HEAP_OPTS holds several JVM flags, as in Kafka's own scripts.
  # The serial collector: the parallel and concurrent threads of G1 (Kafka's default) cost CPU on an idle
  # broker and a heap this small gains nothing from them.
  start_daemon kafka "$KAFKA_DIR/kafka.log" java ${KAFKA_HEAP_OPTS:--Xms128M -Xmx512M} -XX:+UseSerialGC \
    -Djava.awt.headless=true -Dlog4j.configuration="file:$KAFKA_DIR/log4j.properties" \
    -cp "$KAFKA_DIR/libs/*" kafka.Kafka "$KAFKA_DIR/server.properties"
  wait_for 90 kafka_ready || die "kafka did not become ready (see $KAFKA_DIR/kafka.log)"
}

kafka_exited() { ! kill -0 "$1" 2>/dev/null; }

kafka_stop() {
  local pid; pid=$(cat "$TAPYARD_HOME/kafka.pid" 2>/dev/null) || return 0
  stop_daemon kafka
  # A controlled shutdown takes seconds; wait, so that a start right after finds the data directory unlocked.
  wait_for 60 kafka_exited "$pid" || log "kafka (pid $pid) is still shutting down"
}

kafka_status() { kafka_ready && echo "kafka: up (127.0.0.1:$KAFKA_PORT)" || echo "kafka: down"; }

kafka_fields() { printf '{"brokers":"127.0.0.1:%s"}\n' "$KAFKA_PORT"; }
