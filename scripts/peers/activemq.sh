# shellcheck shell=bash
# ---------------------------------------------------------------- ActiveMQ (Debian package, STOMP)
# Sourced by scripts/services. The package's broker runs as our own instance: configuration, data and logs in
# $TAPYARD_HOME/activemq, STOMP and OpenWire on loopback only, a password for every connection. The Debian
# package ships no web console and its config has JMX off, so nothing else listens.
ACTIVEMQ_STOMP_PORT="${TAPYARD_ACTIVEMQ_PORT:-61613}"
ACTIVEMQ_OPENWIRE_PORT="${TAPYARD_ACTIVEMQ_OPENWIRE_PORT:-61616}"
ACTIVEMQ_DIR="$TAPYARD_HOME/activemq"
ACTIVEMQ_PACKAGE_CONF=/etc/activemq/instances-available/main

activemq_install() { [ -f /usr/share/activemq/bin/activemq.jar ] || apt_install activemq; }

# Kept with the other generated credentials (mode 0600); made on first use, from $TAPYARD_ACTIVEMQ_PASSWORD if set.
activemq_password() {
  if ! grep -q '^TAPYARD_ACTIVEMQ_PASSWORD=' "$CREDENTIALS" 2>/dev/null; then
    local pw="${TAPYARD_ACTIVEMQ_PASSWORD:-$(random_secret)}"
    [[ "$pw" =~ ^[A-Za-z0-9_.-]+$ ]] || die "TAPYARD_ACTIVEMQ_PASSWORD may hold only letters, digits, '.', '_' and '-'"
    (umask 077 && echo "TAPYARD_ACTIVEMQ_PASSWORD=$pw" >>"$CREDENTIALS")
  fi
  sed -n 's/^TAPYARD_ACTIVEMQ_PASSWORD=//p' "$CREDENTIALS" | tail -n 1
}

# Ready means a STOMP CONNECT with our credentials is answered, not just an open port: a broker started with
# another password (or not ours) must not pass.
activemq_ready() {
  local pw reply; pw=$(activemq_password)
  reply=$( (exec 3<>"/dev/tcp/127.0.0.1/$ACTIVEMQ_STOMP_PORT" || exit 1
    printf 'CONNECT\naccept-version:1.2\nhost:localhost\nlogin:tapyard\npasscode:%s\n\n\0' "$pw" >&3
    timeout 5 head -c 9 <&3
    printf 'DISCONNECT\n\n\0' >&3) 2>/dev/null) || true
  [ "$reply" = CONNECTED ]
}

# The package's activemq.xml with our connectors and the authentication plugin in place of its connectors.
activemq_configure() {
  local conf="$ACTIVEMQ_DIR/conf" pw; pw=$(activemq_password)
  mkdir -p "$conf" "$ACTIVEMQ_DIR/data" "$ACTIVEMQ_DIR/tmp"
  # Debian's broker logs through log4j 1.2 (lib/optional), so the package's log4j2.properties is never read:
  # without this file it logs nothing. To the console, which start_daemon writes to activemq.log.
  cat >"$conf/log4j.properties" <<'PROPS'
log4j.rootLogger=INFO, out
log4j.logger.org.springframework=WARN
log4j.logger.org.apache.xbean=WARN
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=%d | %-5p | %m | %c | %t%n
PROPS
  (umask 077 && awk -v stomp="$ACTIVEMQ_STOMP_PORT" -v openwire="$ACTIVEMQ_OPENWIRE_PORT" -v pw="$pw" '
    # A test peer starts empty: nothing on it is needed after a restart, and what runs left on it (each
    # names its own queues) only grew its store (167 MB here after some days).
    /<broker xmlns=/ { sub(/<broker /, "<broker deleteAllMessagesOnStartup=\"true\" ") }
    /<transportConnectors>/ {
      print "        <plugins>"
      print "            <simpleAuthenticationPlugin anonymousAccessAllowed=\"false\">"
      print "                <users>"
      print "                    <authenticationUser username=\"tapyard\" password=\"" pw "\" groups=\"users,admins\"/>"
      print "                </users>"
      print "            </simpleAuthenticationPlugin>"
      print "        </plugins>"
      # Bounded to what this JVM and a dev disk have; the defaults (1 GB memory, 100 GB store) are reset with warnings.
      print "        <systemUsage><systemUsage>"
      # Messages may take half of a 1 GB heap: with 70 % of 512 MB the broker ran out of heap (and stopped
      # answering, its port still open) with 200,000 messages of bench:sinks queued.
      print "            <memoryUsage><memoryUsage percentOfJvmHeap=\"50\"/></memoryUsage>"
      print "            <storeUsage><storeUsage limit=\"4 gb\"/></storeUsage>"
      print "            <tempUsage><tempUsage limit=\"1 gb\"/></tempUsage>"
      print "        </systemUsage></systemUsage>"
      print "        <transportConnectors>"
      print "            <transportConnector name=\"stomp\" uri=\"stomp://127.0.0.1:" stomp "?transport.maximumConnections=1000\"/>"
      print "            <transportConnector name=\"openwire\" uri=\"tcp://127.0.0.1:" openwire "\"/>"
      print "        </transportConnectors>"
      skip = 1
    }
    !skip { print }
    /<\/transportConnectors>/ { skip = 0 }' "$ACTIVEMQ_PACKAGE_CONF/activemq.xml" >"$conf/activemq.xml.tmp")
  grep -q "stomp://127.0.0.1:$ACTIVEMQ_STOMP_PORT" "$conf/activemq.xml.tmp" \
    || die "could not put the connectors into $ACTIVEMQ_PACKAGE_CONF/activemq.xml (has the package changed?)"
  mv -f "$conf/activemq.xml.tmp" "$conf/activemq.xml"
}

activemq_start() {
  activemq_install
  if activemq_ready; then log "activemq already running on 127.0.0.1:$ACTIVEMQ_STOMP_PORT"; return 0; fi
  if port_open "$ACTIVEMQ_STOMP_PORT"; then
    [ -f "$TAPYARD_HOME/activemq.pid" ] || die "something we did not start listens on 127.0.0.1:$ACTIVEMQ_STOMP_PORT"
    # A broker busy with a backlog answers slowly: give it time before deciding its credentials are stale.
    if wait_for 30 activemq_ready; then log "activemq already running on 127.0.0.1:$ACTIVEMQ_STOMP_PORT"; return 0; fi
    log "restarting activemq: it does not accept the generated credentials"
    activemq_stop
  fi
  activemq_configure
  log "starting activemq $(dpkg-query -W -f='${Version}' activemq) on 127.0.0.1:$ACTIVEMQ_STOMP_PORT (data in $ACTIVEMQ_DIR)"
  # java itself rather than /usr/bin/activemq: that wrapper reads /usr/share/activemq/activemq-options, which
  # overrides ACTIVEMQ_BASE and the heap and sends the output to /dev/null.
  (cd "$ACTIVEMQ_DIR" && start_daemon activemq "$ACTIVEMQ_DIR/activemq.log" java -Xms256m -Xmx1g \
    -Djava.awt.headless=true -Djava.io.tmpdir="$ACTIVEMQ_DIR/tmp" \
    -Dactivemq.classpath="$ACTIVEMQ_DIR/conf" -Dactivemq.home=/usr/share/activemq -Dactivemq.base="$ACTIVEMQ_DIR" \
    -Dactivemq.conf="$ACTIVEMQ_DIR/conf" -Dactivemq.data="$ACTIVEMQ_DIR/data" \
    -jar /usr/share/activemq/bin/activemq.jar start "xbean:file:$ACTIVEMQ_DIR/conf/activemq.xml")
  wait_for 60 activemq_ready || die "activemq did not become ready (see $ACTIVEMQ_DIR/activemq.log)"
}

# Waits for the JVM to exit: it holds the KahaDB lock until then, and a new broker would queue behind it.
activemq_stop() {
  local pid; pid=$(cat "$TAPYARD_HOME/activemq.pid" 2>/dev/null) || return 0
  stop_daemon activemq
  if ! wait_for 30 bash -c "! kill -0 $pid"; then
    # Past this the lock would keep a new broker waiting for ever: the old one goes.
    log "activemq (pid $pid) did not stop in 30 s: killing it"
    kill -9 "$pid" 2>/dev/null || true
    wait_for 10 bash -c "! kill -0 $pid" || true
  fi
}

activemq_status() {
  activemq_ready && echo "activemq: up (127.0.0.1:$ACTIVEMQ_STOMP_PORT)" || echo "activemq: down"
}

activemq_fields() {
  printf '{"url":"stomp://127.0.0.1:%s","username":"tapyard","password":"%s"}\n' "$ACTIVEMQ_STOMP_PORT" "$(activemq_password)"
}
