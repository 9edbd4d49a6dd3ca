/* Does not compile (koi's test of compiler errors). */
#include "koi_extern.h"

u8 odd(u8 t) {
    return t & 1   /* missing semicolon */
}
