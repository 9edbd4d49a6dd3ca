// A BMv2 extern module (as simple_switch's --load-modules takes them) exercising the parts of
// BMv2's Data and Field API koi implements: arithmetic, signed fields, wide fields, strings,
// widths, and an exception.
#include <bm/bm_sim/data.h>
#include <bm/bm_sim/extern.h>
#include <bm/bm_sim/fields.h>

#include <stdexcept>

// sum <- a * b + a - (b >> 1), modulo 2^32 as the field keeps it.
void arith(bm::Field &sum, const bm::Data &a, const bm::Data &b) {
  bm::Data t;
  t.multiply(a, b);
  t.add(t, a);
  bm::Data half;
  half.shift_right(b, 1u);
  t.sub(t, half);
  sum.set(t);
}
BM_REGISTER_EXTERN_FUNCTION(arith, bm::Field &, const bm::Data &, const bm::Data &);

// s2 <- -3 * s (wrapped into int<8>), s <- s >> 1 (arithmetic).
void negate(bm::Field &s, bm::Field &s2) {
  bm::Data m(-3);
  bm::Data p;
  p.multiply(s, m);
  s2.set(p);
  s.shift_right(s, 1u);
}
BM_REGISTER_EXTERN_FUNCTION(negate, bm::Field &, bm::Field &);

// w2 <- (w << 4) | 0xf, and n <- the widths of both fields and the sign of w2 - 2^71.
void wide(const bm::Field &w, bm::Field &w2, bm::Field &n) {
  bm::Data t;
  t.shift_left(w, 4u);
  t.bit_or(t, bm::Data(std::string("0x0f")));
  w2.set(t);
  bm::Data top(std::string("800000000000000000"));
  bm::Data d;
  d.sub(w2, top);
  n.set(w.get_nbits() + w2.get_nbits() + (d.sign() < 0 ? 0 : 1));
}
BM_REGISTER_EXTERN_FUNCTION(wide, const bm::Field &, bm::Field &, bm::Field &);

// q <- x / y; a zero divisor throws.
void divide(bm::Data x, const bm::Data &y, bm::Field &q) {
  if (y == 0) throw std::runtime_error("divide: zero divisor");
  q.divide(x, y);
}
BM_REGISTER_EXTERN_FUNCTION(divide, bm::Data, const bm::Data &, bm::Field &);

// f <- 0xaa if b else 0x55.
void flag(const bm::Data &b, bm::Field &f) { f.set(b.get_uint() ? 0xaa : 0x55); }
BM_REGISTER_EXTERN_FUNCTION(flag, const bm::Data &, bm::Field &);
