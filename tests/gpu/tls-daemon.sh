# start_tls_daemon PORT ADMIN_PORT: a vmcudad with TLS on the client port (protocol/PROTOCOL.md "Encryption") and a
# certificate for 127.0.0.1 made here with openssl, for run-on-device.sh and run-driver-on-device.sh (sourced after
# they set WORK and ROOT). Sets TLS_CERT (what clients name as VMCUDA_TLS_CA) and TLS_PID (its process group);
# returns 1 with the reason in TLS_PROBLEM when there is no certificate to be had.
start_tls_daemon() {
    local port="$1" admin="$2"
    TLS_CERT="$WORK/tls/vmcudad.pem" TLS_PID="" TLS_PROBLEM=""
    mkdir -p "$WORK/tls" "$WORK/tlsstate"
    if ! command -v openssl >/dev/null; then
        TLS_PROBLEM="no openssl command here to make a certificate"
        return 1
    fi
    if ! openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=vmcuda-gpu-run \
            -addext subjectAltName=IP:127.0.0.1 -keyout "$WORK/tls/vmcudad.key" -out "$TLS_CERT" 2>"$WORK/tls/openssl.err"; then
        TLS_PROBLEM="openssl could not make a certificate: $(tail -1 "$WORK/tls/openssl.err")"
        return 1
    fi
    printf 'control.tls_certificate = %s\ncontrol.tls_key = %s\n' "$TLS_CERT" "$WORK/tls/vmcudad.key" >"$WORK/tls.conf"
    setsid "$ROOT/bin/vmcudad" --listen "127.0.0.1:$port" --admin "127.0.0.1:$admin" --state-dir "$WORK/tlsstate" \
        --config "$WORK/tls.conf" --worker-lib-dir "$ROOT/native" >"$WORK/tls-daemon.log" 2>&1 </dev/null &
    TLS_PID=$!
    for _ in $(seq 1 300); do grep -q "listening on" "$WORK/tls-daemon.log" 2>/dev/null && break; sleep 0.2; done
}
