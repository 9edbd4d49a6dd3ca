/* p4c-ebpf's map helpers, emulated in user space by koi's header: a per-key packet count
 * in a hash map, entries deleted at 3 (koi's extern ABI tests). */
#include "test.h"

struct key { u16 k; };

REGISTER_START()
REGISTER_TABLE(counts, BPF_MAP_TYPE_HASH, struct key, u32, 2)
REGISTER_END()

u32 count_key(u16 k) {
    struct key key = { k };
    u32 one = 1;
    u32 *v = BPF_MAP_LOOKUP_ELEM(counts, &key);
    if (!v) {
        /* A third key does not fit: the map holds 2. */
        if (BPF_MAP_UPDATE_ELEM(counts, &key, &one, BPF_NOEXIST) != 0)
            return 0xffffffff;
        return 1;
    }
    *v += 1;
    if (*v == 3) {
        BPF_MAP_DELETE_ELEM(counts, &key);
        return 3;
    }
    return *v;
}
