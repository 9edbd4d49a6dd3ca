"""Frames in and out of the hosts of koi's P4Runtime client tests (crates/koi/tests/p4rt_*.rs),
and what their client scripts share: their command line, `koi ctl`, the hosts' MACs and
frames.

The client scripts run in the switch's network namespace (where koi's gRPC address is); each
host's interface is in a namespace of its own. A `Host` reaches it through small helper
processes started with `ip netns exec` (the tests run as root): `send` writes raw frames on
the interface, `capture` starts a receiver there and hands back what arrives. Standard
library only, so that every test venv (and plain python3) can use it.

Negative checks need no sleep: send the frame that must not arrive, then a marker frame
that must, on the same way through the switch (koi handles one port's frames in order), and
wait for the marker; whatever was to arrive before it has.
"""

import argparse
import queue
import subprocess
import sys
import threading
import time

# Runs in the host's namespace: argv = [mode, ifname, args...].
_AGENT = r"""
import select, socket, sys, time
mode, ifname = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((ifname, 0))
if mode == "send":
    for h in sys.argv[3:]:
        s.send(bytes.fromhex(h))
    print("sent", len(sys.argv) - 3, flush=True)
    sys.exit(0)
# recv: every frame that arrives on the interface (not those it sends), one hex line each,
# until stdin closes or the time limit passes.
limit = time.monotonic() + float(sys.argv[3])
print("ready", flush=True)
while time.monotonic() < limit:
    r, _, _ = select.select([s, sys.stdin], [], [], 0.2)
    if sys.stdin in r and not sys.stdin.buffer.read1(1):
        break
    if s in r:
        data, addr = s.recvfrom(65535)
        if addr[2] == socket.PACKET_OUTGOING:
            continue
        print(data.hex(), flush=True)
"""

WAIT = 10.0


class CheckFailed(AssertionError):
    pass


def check(cond, what):
    """Fails the run with `what` unless `cond`; prints `ok: what` when it holds."""
    if not cond:
        raise CheckFailed(what)
    print(f"ok: {what}", flush=True)


class Capture:
    """Frames arriving on a host's interface, from `Host.capture` on."""

    def __init__(self, host, limit):
        self.host = host
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", host.ns, sys.executable, "-c", _AGENT, "recv",
             host.ifname, str(limit)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.frames = []
        threading.Thread(target=self._read, daemon=True).start()
        try:
            first = self.lines.get(timeout=WAIT)
        except queue.Empty:
            first = None
        if first != "ready":
            self.close()
            raise CheckFailed(f"receiver on {host} did not start ({first!r})")

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def _pump(self, timeout):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return False
        if line is None:
            raise CheckFailed(f"receiver on {self.host} ended")
        self.frames.append(bytes.fromhex(line))
        return True

    def wait_for(self, pred, timeout=WAIT):
        """Waits until a frame satisfying `pred` has arrived; returns it (None on timeout)."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for f in self.frames[seen:]:
                if pred(f):
                    return f
            seen = len(self.frames)
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self._pump(min(left, 0.2))

    def wait_count(self, pred, n, timeout=WAIT):
        """Waits until `n` frames satisfying `pred` arrived; returns how many did."""
        deadline = time.monotonic() + timeout
        while True:
            got = sum(1 for f in self.frames if pred(f))
            left = deadline - time.monotonic()
            if got >= n or left <= 0:
                return got
            self._pump(min(left, 0.2))

    def matching(self, pred):
        return [f for f in self.frames if pred(f)]

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Host:
    """A host interface `ifname` in network namespace `ns`, behind koi port `port`."""

    def __init__(self, ns, ifname, port):
        self.ns, self.ifname, self.port = ns, ifname, port

    def __str__(self):
        return f"{self.ns}/{self.ifname} (port {self.port})"

    def send(self, *frames):
        out = subprocess.run(
            ["ip", "netns", "exec", self.ns, sys.executable, "-c", _AGENT, "send",
             self.ifname] + [bytes(f).hex() for f in frames],
            capture_output=True, text=True, timeout=WAIT)
        if out.returncode != 0:
            raise CheckFailed(f"sending on {self}: {out.stderr}")

    def capture(self, limit=60):
        return Capture(self, limit)


def hosts_from(spec):
    """`NS:IF:PORT,NS:IF:PORT,...` (the tests' --hosts argument) to a list of `Host`s."""
    out = []
    for part in spec.split(","):
        ns, ifname, port = part.split(":")
        out.append(Host(ns, ifname, int(port)))
    return out


# The hosts' MACs by port, the controller's, and the test frames' EtherType.
MAC = {1: "02:00:00:00:00:01", 2: "02:00:00:00:00:02", 3: "02:00:00:00:00:03"}
CPU_MAC = "02:00:00:00:00:cc"
L2_TYPE = 0x88B5


def mac_bytes(m):
    return bytes.fromhex(m.replace(":", ""))


def frame(src, dst, tag, ether_type=L2_TYPE):
    """A 60-byte Ethernet frame from `src` to `dst` whose payload starts with `tag`."""
    return mac_bytes(dst) + mac_bytes(src) + ether_type.to_bytes(2, "big") + \
        tag.encode().ljust(46, b".")


class Ctl:
    """`koi ctl` on the switch's control socket: `ctl("table_dump", "t")` is its output."""

    def __init__(self, koi, sock):
        self.koi, self.sock = koi, sock

    def __call__(self, *args):
        out = subprocess.run([self.koi, "ctl", "--ctl", self.sock] + list(args),
                             capture_output=True, text=True, timeout=20)
        if out.returncode != 0:
            raise AssertionError(f"koi ctl {' '.join(args)}: {out.stdout}{out.stderr}")
        return out.stdout


def client_args():
    """The client scripts' command line: --grpc --p4info --device-config --hosts --koi --ctl
    (all required) and --device-id (default 1)."""
    ap = argparse.ArgumentParser()
    for a in ("grpc", "p4info", "device-config", "hosts", "koi", "ctl"):
        ap.add_argument("--" + a, required=True)
    ap.add_argument("--device-id", type=int, default=1)
    return ap.parse_args()
