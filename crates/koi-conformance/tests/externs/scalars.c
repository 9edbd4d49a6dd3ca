/* Scalars by value (koi's extern ABI tests): bit<N> as the smallest fitting uintN_t,
 * int<N> as intN_t, bool as u8. Plain C (no koi header), so that the tests also build it
 * into a shared object of its own. */
#include <stdint.h>

uint16_t mix(uint8_t a, uint16_t b, uint32_t c, uint64_t d, uint16_t e) {
    return (uint16_t)(a * 3u + b * 5u + (c >> 16) + (uint16_t)(d >> 48) + e * 7u);
}

int16_t twice(int8_t s) {
    return (int16_t)(s * 2);
}

uint8_t odd(uint8_t t) {
    return t & 1;
}
