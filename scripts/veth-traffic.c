// Bounded traffic generator and receive counter for scripts/bench-veth.sh (Linux, root).
// Compiled at run time: gcc -O2 -o /tmp/.../veth-traffic scripts/veth-traffic.c
//
//   veth-traffic send IFNAME COUNT DSTMAC [FLOWS] [BATCH] [SIZE] [MAX_SECONDS]
//     Sends COUNT (or as many as it can in MAX_SECONDS, default 30) Ethernet/IPv4/UDP frames of SIZE bytes (without FCS; default 60, 64 on the
//     wire) to DSTMAC out of IFNAME as fast as it can: a raw AF_PACKET socket
//     (PACKET_QDISC_BYPASS), sendmmsg(2) batches of BATCH frames (default 64), FLOWS distinct
//     UDP source ports in turn (default 1). Prints one line:
//       sent=N start_ns=T end_ns=T pps=P cpu_pct=C
//     (times are CLOCK_MONOTONIC; cpu_pct is the sender's user+system CPU over its run, 100 =
//     one core; on a veth the kernel's receive path of the peer runs in the sender's context).
//
//   veth-traffic count IFNAME MAX_SECONDS IDLE_MS [TASK...]
//     Samples /sys/class/net/IFNAME/statistics/rx_packets every 5 ms (run it inside the
//     receiver's namespace: `ip netns exec NS`, which mounts that namespace's sysfs). Ends
//     IDLE_MS after the counter last grew (once it has grown at all), or after MAX_SECONDS.
//     Each TASK (/proc/PID: all its threads, or /proc/PID/task/TID: one thread) and /proc/stat
//     are read at the sample where the counter first grew and the one where it last grew, so
//     that CPU usage covers the time packets arrived and not the idle tail. Prints one line:
//       rx=N first_ns=T last_ns=T cpu0=C wait0=W cpu1=C wait1=W ... sys_busy=B sys_softirq=S
//     cpuK: percent of one core TASK K ran between the two samples (schedstat; softirq work
//     done in its context is included unless the kernel has IRQ time accounting); waitK:
//     percent of that time it spent runnable but waiting for a CPU (machine contention);
//     sys_busy and sys_softirq: the whole machine's non-idle and softirq time, in percent of
//     one core (at most 100 x cores).
//
//   veth-traffic flow IFNAME DSTMAC SRCMAC SRCIP DSTIP DPORT PPS SECONDS [NEW]
//     Sends 60-byte Ethernet/IPv4/UDP frames SRCIP -> DSTIP:DPORT from SRCMAC to DSTMAC out of
//     IFNAME for SECONDS: PPS frames a second (paced in bursts of at most 16), or as fast as
//     it can with PPS 0 (sendmmsg batches of 64). With NEW=1 every frame is a new flow: the
//     low 16 bits of the source address and the source port change from frame to frame (a
//     flood of new 5-tuples), else the source port is 1024. With NEW=N > 1 the destination MAC
//     goes through N addresses 02:aa:00:00:HH:LL in turn instead (N <= 65536). The UDP payload starts with the
//     frame's sequence number (big-endian 32 bits). Prints: sent=N pps=P
//
//   veth-traffic recvudp IFNAME SECONDS DPORT...
//     Counts the IPv4/UDP frames to each DPORT arriving on IFNAME (a raw socket) for SECONDS,
//     and the frames of each that arrived after one with a higher sequence number (out of
//     order). Prints one line per DPORT: dport=D rx=N reordered=R
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

static int parse_mac(const char *s, uint8_t m[6]) {
    unsigned v[6];
    if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
        return -1;
    for (int i = 0; i < 6; i++) m[i] = (uint8_t)v[i];
    return 0;
}

static uint16_t csum(const uint8_t *p, int n) {
    uint32_t s = 0;
    for (int i = 0; i + 1 < n; i += 2) s += (uint32_t)(p[i] << 8 | p[i + 1]);
    while (s >> 16) s = (s & 0xffff) + (s >> 16);
    return (uint16_t)~s;
}

// An Ethernet/IPv4/UDP frame 198.18.0.1:sport -> 198.18.1.2:9 (UDP checksum 0).
static void build(uint8_t *f, int size, const uint8_t dst[6], const uint8_t src[6], uint16_t sport) {
    memset(f, 0, size);
    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    f[12] = 0x08, f[13] = 0x00;
    uint8_t *ip = f + 14;
    int iplen = size - 14;
    ip[0] = 0x45;
    ip[2] = iplen >> 8, ip[3] = iplen & 0xff;
    ip[8] = 64, ip[9] = 17;
    ip[12] = 198, ip[13] = 18, ip[14] = 0, ip[15] = 1;
    ip[16] = 198, ip[17] = 18, ip[18] = 1, ip[19] = 2;
    uint16_t c = csum(ip, 20);
    ip[10] = c >> 8, ip[11] = c & 0xff;
    uint8_t *udp = ip + 20;
    int ulen = iplen - 20;
    udp[0] = sport >> 8, udp[1] = sport & 0xff;
    udp[2] = 0, udp[3] = 9;
    udp[4] = ulen >> 8, udp[5] = ulen & 0xff;
}

static int cmd_send(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: veth-traffic send IFNAME COUNT DSTMAC [FLOWS] [BATCH] [SIZE] [MAX_SECONDS]\n");
        return 2;
    }
    const char *ifname = argv[2];
    uint64_t count = strtoull(argv[3], NULL, 10);
    uint8_t dst[6], src[6] = {0x02, 0, 0, 0, 0, 0x01};
    if (parse_mac(argv[4], dst)) {
        fprintf(stderr, "bad MAC %s\n", argv[4]);
        return 2;
    }
    int flows = argc > 5 ? atoi(argv[5]) : 1;
    int batch = argc > 6 ? atoi(argv[6]) : 64;
    int size = argc > 7 ? atoi(argv[7]) : 60;
    uint64_t max_ns = (uint64_t)((argc > 8 ? atof(argv[8]) : 30) * 1e9);
    if (flows < 1 || batch < 1 || batch > 1024 || size < 42 || size > 1514) {
        fprintf(stderr, "bad FLOWS, BATCH or SIZE\n");
        return 2;
    }
    int fd = socket(AF_PACKET, SOCK_RAW, 0);
    if (fd < 0) die("socket");
    int one = 1;
    if (setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one)) die("PACKET_QDISC_BYPASS");
    int sndbuf = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf);
    struct sockaddr_ll sll = {0};
    sll.sll_family = AF_PACKET;
    sll.sll_ifindex = (int)if_nametoindex(ifname);
    if (!sll.sll_ifindex) die(ifname);
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll)) die("bind");

    uint8_t *frames = malloc((size_t)flows * size);
    for (int i = 0; i < flows; i++) build(frames + (size_t)i * size, size, dst, src, (uint16_t)(1024 + i));
    struct mmsghdr *msgs = calloc(batch, sizeof *msgs);
    struct iovec *iov = calloc(batch, sizeof *iov);
    for (int i = 0; i < batch; i++) {
        iov[i].iov_len = size;
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    uint64_t t0 = now_ns(), sent = 0, next = 0, errors = 0;
    while (sent < count && now_ns() - t0 < max_ns) {
        int n = (int)(count - sent < (uint64_t)batch ? count - sent : (uint64_t)batch);
        for (int i = 0; i < n; i++) {
            iov[i].iov_base = frames + (size_t)(next % flows) * size;
            next++;
        }
        int k = sendmmsg(fd, msgs, n, 0);
        if (k < 0) {
            if (errno == EINTR || errno == ENOBUFS || errno == EAGAIN) {
                if (++errors > 10000000) die("sendmmsg");
                next -= n;
                continue;
            }
            die("sendmmsg");
        }
        next -= n - k;
        sent += k;
    }
    uint64_t t1 = now_ns();
    getrusage(RUSAGE_SELF, &r1);
    double secs = (t1 - t0) / 1e9;
    double cpu = (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) + (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e6 +
                 (r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) + (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
    printf("sent=%llu start_ns=%llu end_ns=%llu pps=%.0f cpu_pct=%.1f\n", (unsigned long long)sent,
           (unsigned long long)t0, (unsigned long long)t1, sent / secs, 100.0 * cpu / secs);
    return 0;
}

static uint64_t read_u64(int fd) {
    char buf[64];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return 0;
    buf[n] = 0;
    return strtoull(buf, NULL, 10);
}

// Run time and run-queue wait (ns, from schedstat) of a task (/proc/PID/task/TID) or, for
// /proc/PID, the sum over all its threads; 0 if it cannot be read.
static void sched_ns(const char *path, uint64_t *run, uint64_t *wait) {
    *run = *wait = 0;
    char p[512];
    const char *t = strstr(path, "/task/");
    if (t) {
        snprintf(p, sizeof p, "%s/schedstat", path);
        FILE *f = fopen(p, "r");
        if (!f) return;
        unsigned long long r = 0, w = 0;
        if (fscanf(f, "%llu %llu", &r, &w) == 2) *run = r, *wait = w;
        fclose(f);
        return;
    }
    snprintf(p, sizeof p, "%s/task", path);
    DIR *d = opendir(p);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char q[600];
        snprintf(q, sizeof q, "%s/task/%s", path, e->d_name);
        uint64_t r, w;
        sched_ns(q, &r, &w);
        *run += r, *wait += w;
    }
    closedir(d);
}

// Whole machine: busy (user, nice, system, irq, softirq) and softirq ticks.
static void sys_ticks(uint64_t *busy, uint64_t *softirq) {
    unsigned long long v[10] = {0};
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return;
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
               &v[6], &v[7]) < 8) {
        fclose(f);
        return;
    }
    fclose(f);
    *busy = v[0] + v[1] + v[2] + v[5] + v[6];
    *softirq = v[6];
}

#define MAXSTAT 8
struct snap {
    uint64_t t, run[MAXSTAT], wait[MAXSTAT], busy, softirq;
};

static void take(struct snap *s, uint64_t t, int nstat, char **stat) {
    s->t = t;
    for (int i = 0; i < nstat; i++) sched_ns(stat[i], &s->run[i], &s->wait[i]);
    sys_ticks(&s->busy, &s->softirq);
}

static int cmd_count(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: veth-traffic count IFNAME MAX_SECONDS IDLE_MS [TASK...]\n");
        return 2;
    }
    char path[256];
    snprintf(path, sizeof path, "/sys/class/net/%s/statistics/rx_packets", argv[2]);
    int fd = open(path, O_RDONLY);
    if (fd < 0) die(path);
    uint64_t max_ns = (uint64_t)(atof(argv[3]) * 1e9), idle_ns = strtoull(argv[4], NULL, 10) * 1000000ull;
    int nstat = argc - 5 > MAXSTAT ? MAXSTAT : argc - 5;
    char **stat = argv + 5;
    uint64_t base = read_u64(fd), last = base, start = now_ns();
    struct snap first = {0}, end = {0};
    int grown = 0;
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        struct timespec d = {0, 5000000};
        nanosleep(&d, NULL);
        uint64_t t = now_ns(), v = read_u64(fd);
        if (v != last) {
            if (!grown) take(&first, t, nstat, stat), grown = 1;
            take(&end, t, nstat, stat);
            last = v;
        }
        if (grown && t - end.t > idle_ns) break;
        if (t - start > max_ns) break;
    }
    long hz = sysconf(_SC_CLK_TCK);
    double win = grown && end.t > first.t ? (end.t - first.t) / 1e9 : 0;
    printf("rx=%llu first_ns=%llu last_ns=%llu", (unsigned long long)(last - base), (unsigned long long)first.t,
           (unsigned long long)end.t);
    for (int i = 0; i < nstat; i++)
        printf(" cpu%d=%.1f wait%d=%.1f", i, win > 0 ? 100.0 * (end.run[i] - first.run[i]) / 1e9 / win : 0, i,
               win > 0 ? 100.0 * (end.wait[i] - first.wait[i]) / 1e9 / win : 0);
    printf(" sys_busy=%.1f sys_softirq=%.1f\n", win > 0 ? 100.0 * (end.busy - first.busy) / hz / win : 0,
           win > 0 ? 100.0 * (end.softirq - first.softirq) / hz / win : 0);
    return 0;
}

static int parse_ip(const char *s, uint8_t ip[4]) {
    unsigned v[4];
    if (sscanf(s, "%u.%u.%u.%u", &v[0], &v[1], &v[2], &v[3]) != 4) return -1;
    for (int i = 0; i < 4; i++) {
        if (v[i] > 255) return -1;
        ip[i] = (uint8_t)v[i];
    }
    return 0;
}

// The frame of `flow`: sequence `seq`; with `fresh`, its own source address and port.
static void flow_frame(uint8_t *f, const uint8_t dst[6], const uint8_t src[6], const uint8_t sip[4],
                       const uint8_t dip[4], uint16_t dport, uint32_t seq, int fresh) {
    int tuples = fresh == 1;
    build(f, 60, dst, src, tuples ? (uint16_t)(1024 + (seq >> 16) % 60000) : 1024);
    if (fresh > 1) {
        uint32_t n = seq % (uint32_t)fresh;
        f[0] = 0x02, f[1] = 0xaa, f[2] = 0, f[3] = 0, f[4] = (uint8_t)(n >> 8), f[5] = (uint8_t)n;
    }
    uint8_t *ip = f + 14;
    memcpy(ip + 12, sip, 4);
    memcpy(ip + 16, dip, 4);
    if (tuples) ip[14] = (uint8_t)(seq >> 8), ip[15] = (uint8_t)seq;
    ip[10] = ip[11] = 0;
    uint16_t c = csum(ip, 20);
    ip[10] = c >> 8, ip[11] = c & 0xff;
    uint8_t *udp = ip + 20;
    udp[2] = dport >> 8, udp[3] = dport & 0xff;
    udp[8] = seq >> 24, udp[9] = seq >> 16, udp[10] = seq >> 8, udp[11] = seq;
}

static int cmd_flow(int argc, char **argv) {
    if (argc < 10) {
        fprintf(stderr, "usage: veth-traffic flow IFNAME DSTMAC SRCMAC SRCIP DSTIP DPORT PPS SECONDS [NEW]\n");
        return 2;
    }
    uint8_t dst[6], src[6], sip[4], dip[4];
    if (parse_mac(argv[3], dst) || parse_mac(argv[4], src) || parse_ip(argv[5], sip) || parse_ip(argv[6], dip)) {
        fprintf(stderr, "bad MAC or address\n");
        return 2;
    }
    uint16_t dport = (uint16_t)atoi(argv[7]);
    double pps = atof(argv[8]);
    uint64_t dur = (uint64_t)(atof(argv[9]) * 1e9);
    int fresh = argc > 10 ? atoi(argv[10]) : 0;
    int fd = socket(AF_PACKET, SOCK_RAW, 0);
    if (fd < 0) die("socket");
    int one = 1;
    if (setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one)) die("PACKET_QDISC_BYPASS");
    int sndbuf = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf);
    struct sockaddr_ll sll = {0};
    sll.sll_family = AF_PACKET;
    sll.sll_ifindex = (int)if_nametoindex(argv[2]);
    if (!sll.sll_ifindex) die(argv[2]);
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll)) die("bind");
    enum { BURST = 64 };
    static uint8_t frames[BURST][60];
    struct mmsghdr msgs[BURST];
    struct iovec iov[BURST];
    memset(msgs, 0, sizeof msgs);
    for (int i = 0; i < BURST; i++) {
        iov[i].iov_base = frames[i];
        iov[i].iov_len = 60;
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    // Paced: bursts of up to 16 frames at the times they are due.
    int burst = BURST;
    uint64_t gap = 0;
    if (pps > 0) {
        burst = pps >= 16000 ? 16 : 1;
        gap = (uint64_t)(1e9 * burst / pps);
    }
    uint64_t t0 = now_ns(), due = t0, sent = 0;
    uint32_t seq = 0;
    while (now_ns() - t0 < dur) {
        if (gap) {
            struct timespec ts = {(time_t)(due / 1000000000ull), (long)(due % 1000000000ull)};
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
            due += gap;
        }
        for (int i = 0; i < burst; i++) flow_frame(frames[i], dst, src, sip, dip, dport, seq + i, fresh);
        int k = sendmmsg(fd, msgs, burst, 0);
        if (k < 0) {
            if (errno == EINTR || errno == ENOBUFS || errno == EAGAIN) continue;
            die("sendmmsg");
        }
        seq += k;
        sent += k;
    }
    double secs = (now_ns() - t0) / 1e9;
    printf("sent=%llu pps=%.0f\n", (unsigned long long)sent, sent / secs);
    return 0;
}

static int cmd_recvudp(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: veth-traffic recvudp IFNAME SECONDS DPORT...\n");
        return 2;
    }
    int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_IP));
    if (fd < 0) die("socket");
    int rcvbuf = 16 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
    struct sockaddr_ll sll = {0};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_IP);
    sll.sll_ifindex = (int)if_nametoindex(argv[2]);
    if (!sll.sll_ifindex) die(argv[2]);
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll)) die("bind");
    int n = argc - 4 > 16 ? 16 : argc - 4;
    uint16_t ports[16];
    uint64_t rx[16] = {0}, reordered[16] = {0};
    int64_t last[16];
    for (int i = 0; i < n; i++) ports[i] = (uint16_t)atoi(argv[4 + i]), last[i] = -1;
    uint64_t dur = (uint64_t)(atof(argv[3]) * 1e9), t0 = now_ns();
    printf("ready\n");
    fflush(stdout);
    uint8_t buf[2048];
    while (now_ns() - t0 < dur) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0) continue;
        ssize_t len;
        while ((len = recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0) {
            // Ethernet (no VLAN) + IPv4 (IHL 5) + UDP + 4-byte sequence.
            if (len < 14 + 20 + 12 || buf[12] != 0x08 || buf[13] != 0x00 || buf[23] != 17) continue;
            uint8_t *udp = buf + 14 + (buf[14] & 0x0f) * 4;
            if (udp + 12 > buf + len) continue;
            uint16_t dp = (uint16_t)(udp[2] << 8 | udp[3]);
            int64_t seq = (int64_t)((uint32_t)udp[8] << 24 | (uint32_t)udp[9] << 16 | (uint32_t)udp[10] << 8 | udp[11]);
            for (int i = 0; i < n; i++) {
                if (ports[i] != dp) continue;
                rx[i]++;
                if (seq < last[i]) reordered[i]++;
                else last[i] = seq;
            }
        }
    }
    for (int i = 0; i < n; i++)
        printf("dport=%u rx=%llu reordered=%llu\n", ports[i], (unsigned long long)rx[i], (unsigned long long)reordered[i]);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "send")) return cmd_send(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "count")) return cmd_count(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "flow")) return cmd_flow(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "recvudp")) return cmd_recvudp(argc, argv);
    fprintf(stderr, "usage: veth-traffic send|count|flow|recvudp ...\n");
    return 2;
}
