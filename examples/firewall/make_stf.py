#!/usr/bin/env python3
"""Writes firewall_tcp.stf and firewall_udp_icmp.stf (next to this file): the STF scenarios of
firewall.p4, with every expected packet computed here (the input routed: MACs rewritten, TTL
decremented, IPv4 checksum recomputed), not by koi."""
import os
import struct, sys
FW="0200000000fe"; IN_MAC="020000000101"; OUT_MAC="020000000201"
def csum(b):
    if len(b)%2: b+=b'\0'
    s=sum(struct.unpack('!%dH'%(len(b)//2),b))
    while s>>16: s=(s&0xffff)+(s>>16)
    return (~s)&0xffff
def ipb(a): return bytes(int(x) for x in a.split('.'))
def ip(src,dst,proto,l4,ttl=64,ident=1):
    h=bytearray(struct.pack('!BBHHHBBH4s4s',0x45,0,20+len(l4),ident,0,ttl,proto,0,ipb(src),ipb(dst)))
    h[10:12]=struct.pack('!H',csum(bytes(h)))
    return bytes(h)+l4
def l4sum(src,dst,proto,seg):
    ph=ipb(src)+ipb(dst)+struct.pack('!BBH',0,proto,len(seg))
    return csum(ph+seg)
def tcp(src,dst,sp,dp,flags,seq=1,ack=0,data=b''):
    t=bytearray(struct.pack('!HHIIBBHHH',sp,dp,seq,ack,0x50,flags,8192,0,0)+data)
    t[16:18]=struct.pack('!H',l4sum(src,dst,6,bytes(t)))
    return ip(src,dst,6,bytes(t))
def udp(src,dst,sp,dp,data=b'x'*8):
    u=bytearray(struct.pack('!HHHH',sp,dp,8+len(data),0)+data)
    u[6:8]=struct.pack('!H',l4sum(src,dst,17,bytes(u)))
    return ip(src,dst,17,bytes(u))
def icmp(src,dst,typ,ident,seq=1,code=0):
    m=bytearray(struct.pack('!BBHHH',typ,code,0,ident,seq)+b'ping'*4)
    m[2:4]=struct.pack('!H',csum(bytes(m)))
    return ip(src,dst,1,bytes(m))
def frame(dmac,smac,payload,et=b'\x08\x00'): return bytes.fromhex(dmac)+bytes.fromhex(smac)+et+payload
def routed(f,nh):
    f=bytearray(f); f[0:6]=bytes.fromhex(nh); f[6:12]=bytes.fromhex(FW)
    f[22]-=1; f[24:26]=b'\0\0'; f[24:26]=struct.pack('!H',csum(bytes(f[14:34]))); return bytes(f)
out = []
def comment(s): out.append('# '+s)
def send_in(pl,expect=True,note=''):
    f=frame(FW,IN_MAC,pl); out.append(f'# {note}' if note else '#')
    out.append('packet 1 '+f.hex())
    if expect: out.append('expect 2 '+routed(f,OUT_MAC).hex()+' $')
def send_out(pl,expect=True,note=''):
    f=frame(FW,OUT_MAC,pl); out.append(f'# {note}' if note else '#')
    out.append('packet 2 '+f.hex())
    if expect: out.append('expect 1 '+routed(f,IN_MAC).hex()+' $')

def tcp_scenario():
    global out
    out = []
    H="10.0.1.1"; S="203.0.113.5"
    hdr = f"""# firewall.p4, TCP: a connection from the inside, its handshake, data both ways and its
    # close; what the outside may not do; a RST that closes a connection, which expires after
    # the CLOSE timeout. STF runs give packet k the ingress timestamp k microseconds; the
    # timeouts (microseconds) are set short for the test: CLOSE 3, the others long.
    # (Generated: every expected packet is the input routed: MACs rewritten, TTL 63, IPv4
    # checksum recomputed.)
    add FwIngress.zone std.ingress_port:1 FwIngress.set_zone(zone:1)
    add FwIngress.zone std.ingress_port:2 FwIngress.set_zone(zone:2)
    add FwIngress.routing hdr.ipv4.dst:0x0a000101/32 FwIngress.set_nexthop(router_mac:0x{FW}, nexthop_mac:0x{IN_MAC}, port:1)
    add FwIngress.routing hdr.ipv4.dst:0x00000000/0 FwIngress.set_nexthop(router_mac:0x{FW}, nexthop_mac:0x{OUT_MAC}, port:2)
    setdefault FwIngress.ct_timeouts FwIngress.set_timeouts(syn_sent:1000, syn_recv:1000, established:1000, fin_wait:1000, time_wait:1000, close:3, udp:1000, udp_stream:1000, icmp:1000)
    """
    A=(H,40000,S,80); B=(H,40003,S,443)
    S_,SA,A_,PA,F,FA,R=0x02,0x12,0x10,0x18,0x01,0x11,0x04
    send_in(tcp(H,S,40000,80,S_),note='t=0 inside SYN of A (10.0.1.1:40000 -> 203.0.113.5:80): opens A, forwarded')
    send_out(tcp(S,H,80,40000,SA,seq=500,ack=2),note='t=1 outside SYN+ACK of A: forwarded (SYN_RECV)')
    send_in(tcp(H,S,40000,80,A_,seq=2,ack=501),note='t=2 inside ACK of A: forwarded (ESTABLISHED)')
    send_out(tcp(S,H,80,40000,PA,seq=501,ack=2,data=b'hello'),note='t=3 outside data of A: forwarded')
    send_in(tcp(H,S,40000,80,PA,seq=2,ack=506,data=b'world'),note='t=4 inside data of A: forwarded')
    send_out(tcp("203.0.113.9",H,5555,22,S_),False,'t=5 outside SYN to 10.0.1.1:22: new from the outside, dropped')
    send_out(tcp(S,H,80,40001,A_,seq=9,ack=9),False,'t=6 outside stray ACK (no connection): dropped')
    send_in(tcp(H,S,40002,80,A_,seq=9,ack=9),False,'t=7 inside stray ACK (no connection): cannot open one, dropped')
    send_out(tcp(S,H,443,40003,SA,seq=9,ack=9),False,'t=8 outside SYN+ACK before any SYN: dropped')
    send_in(tcp(H,S,40003,443,S_),note='t=9 inside SYN of B (10.0.1.1:40003 -> :443): opens B')
    send_in(tcp(H,S,40003,443,S_),note='t=10 inside SYN of B again (a retransmission): forwarded')
    send_out(tcp(S,H,443,40003,SA,seq=700,ack=2),note='t=11 outside SYN+ACK of B: forwarded')
    send_in(tcp(H,S,40003,443,A_,seq=2,ack=701),note='t=12 inside ACK of B: forwarded')
    send_out(tcp(S,H,443,40003,R|A_,seq=701,ack=2),note='t=13 outside RST of B: forwarded, B is CLOSE (expires at 16)')
    send_out(tcp(S,H,443,40003,A_,seq=701,ack=2),note='t=14 outside ACK of B within the CLOSE timeout: forwarded (expires at 17)')
    send_in(tcp(H,S,40000,80,A_,seq=7,ack=506),note='t=15 inside ACK of A: forwarded')
    send_out(tcp(S,H,80,40000,A_,seq=506,ack=7),note='t=16 outside ACK of A: forwarded')
    send_out(tcp(S,H,443,40003,A_,seq=701,ack=2),False,'t=17 outside ACK of B: B expired, new from the outside, dropped')
    send_in(tcp(H,S,40000,80,FA,seq=7,ack=506),note='t=18 inside FIN of A: forwarded (FIN_WAIT)')
    send_out(tcp(S,H,80,40000,FA,seq=506,ack=8),note='t=19 outside FIN of A: forwarded (TIME_WAIT)')
    send_in(tcp(H,S,40000,80,A_,seq=8,ack=507),note='t=20 inside last ACK of A: forwarded')
    send_in(tcp(H,S,40003,443,S_),note='t=21 inside SYN of B: opens B again')
    send_out(tcp(S,H,443,40003,SA,seq=900,ack=2),note='t=22 outside SYN+ACK of B: forwarded')
    return "\n".join(l.lstrip() for l in hdr.split("\n")) + "\n".join(out) + "\n"

def udp_scenario():
    global out
    out = []
    H="10.0.1.1"; D="203.0.113.53"; P="203.0.113.7"
    hdr = f"""# firewall.p4, UDP and ICMP echo: a UDP request opens a connection whose replies pass
    # until it expires (UDP 4 microseconds unreplied, 6 once replied), ICMP echo requests from
    # the inside let their replies in (ICMP 4); what is dropped: new from the outside, echo
    # requests from the outside, replies after the timeout, other ICMP, non-IPv4, TTL 1. STF
    # runs give packet k the ingress timestamp k microseconds.
    # (Generated: every expected packet is the input routed: MACs rewritten, TTL 63, IPv4
    # checksum recomputed.)
    add FwIngress.zone std.ingress_port:1 FwIngress.set_zone(zone:1)
    add FwIngress.zone std.ingress_port:2 FwIngress.set_zone(zone:2)
    add FwIngress.routing hdr.ipv4.dst:0x0a000101/32 FwIngress.set_nexthop(router_mac:0x{FW}, nexthop_mac:0x{IN_MAC}, port:1)
    add FwIngress.routing hdr.ipv4.dst:0x00000000/0 FwIngress.set_nexthop(router_mac:0x{FW}, nexthop_mac:0x{OUT_MAC}, port:2)
    setdefault FwIngress.ct_timeouts FwIngress.set_timeouts(syn_sent:1000, syn_recv:1000, established:1000, fin_wait:1000, time_wait:1000, close:1000, udp:4, udp_stream:6, icmp:4)
    """
    send_in(udp(H,D,5000,53),note='t=0 inside UDP C (10.0.1.1:5000 -> 203.0.113.53:53): opens C (expires at 4)')
    send_out(udp(D,H,53,5000),note='t=1 outside reply of C: forwarded, C is replied (expires at 7)')
    send_in(udp(H,D,5000,53),note='t=2 inside UDP C: forwarded (expires at 8)')
    send_out(udp(D,H,54,5000),False,'t=3 outside UDP from another port: new from the outside, dropped')
    send_in(udp(H,D,5001,53),note='t=4 inside UDP D (:5001): opens D (expires at 8)')
    send_in(udp(H,D,5000,53),note='t=5 inside UDP C: forwarded')
    send_in(udp(H,D,5000,53),note='t=6 inside UDP C: forwarded')
    send_out(udp(D,H,53,5000),note='t=7 outside reply of C: forwarded')
    send_out(udp(D,H,53,5001),False,'t=8 outside reply of D: D expired at 8, dropped')
    send_in(icmp(H,P,8,77),note='t=9 inside echo request, id 77: opens it (expires at 13)')
    send_out(icmp(P,H,0,77),note='t=10 outside echo reply, id 77: forwarded (expires at 14)')
    send_out(icmp(P,H,8,99),False,'t=11 outside echo request: new from the outside, dropped')
    send_out(icmp(P,H,0,78),False,'t=12 outside echo reply, id 78 (no request): dropped')
    send_in(icmp(H,P,0,99),False,'t=13 inside echo reply (to an outside request never let in): dropped')
    send_out(icmp(P,H,0,77),False,'t=14 outside echo reply, id 77: expired at 14, dropped')
    send_in(icmp(H,P,3,0,code=1),False,'t=15 inside ICMP destination unreachable: not tracked, dropped')
    out.append('# t=16 inside ARP request: not IPv4, dropped')
    out.append('packet 1 ffffffffffff'+IN_MAC+'0806'+'0001080006040001'+IN_MAC+'0a000101'+'000000000000'+'0a0001fe')
    send_in(udp(H,D,5002,53,)[:8]+bytes([1])+udp(H,D,5002,53)[9:],False,'t=17 inside UDP with TTL 1: dropped')
    send_in(udp(H,D,5000,53),note='t=18 inside UDP C: still forwarded')
    return "\n".join(l.lstrip() for l in hdr.split("\n")) + "\n".join(out) + "\n"

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    for name, make in (("firewall_tcp.stf", tcp_scenario), ("firewall_udp_icmp.stf", udp_scenario)):
        with open(os.path.join(here, name), "w") as f:
            f.write(make())
