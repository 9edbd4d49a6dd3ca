/* Wide bit<N>, out/inout parameters, headers and structs (koi's extern ABI tests). */
#include "test.h"

/* bit<128> in: a pointer to 16 big-endian bytes. */
uint8_t wide_in(const uint8_t *w) {
    return w[0] ^ w[15];
}

/* bit<96> out: a pointer to 12 big-endian bytes. */
void wide_out(uint8_t k, uint8_t *x) {
    for (int i = 0; i < 12; i++)
        x[i] = (uint8_t)(k + i);
}

void scalars_out(uint32_t a, uint32_t *b, uint16_t *c) {
    *b = a + 1;
    *c = (uint16_t)(*c * 2);
}

/* A header by value: its fields in host byte order, then ebpf_valid. */
uint16_t hdr_in(struct h_t h) {
    return h.ebpf_valid ? (uint16_t)(h.a + h.b) : 0xffff;
}

/* A header by pointer (inout): fields and validity written back. */
void hdr_inout(struct h_t *h) {
    h->a += 1;
    if (h->b == 0xdead)
        h->ebpf_valid = 0;
}

/* A struct by value. */
uint32_t struct_in(struct pair_t s) {
    return s.p * 1000u + s.q;
}
