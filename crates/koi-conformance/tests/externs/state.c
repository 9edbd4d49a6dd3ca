/* An impure extern function (it keeps a count) and a pure one (koi's datapath tests). */
#include "koi_extern.h"

static uint32_t calls;

uint32_t counter_next(uint8_t k) {
    calls++;
    return calls * 256u + k;
}

uint32_t square(uint32_t x) {
    return x * x;
}
