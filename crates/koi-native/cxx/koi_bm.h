/* koi's implementation of the part of BMv2's extern-module API that extern functions use
 * (docs/externs.md, "BMv2 extern modules"): bm::Data, bm::Field, bm::ByteContainer and
 * BM_REGISTER_EXTERN_FUNCTION, reachable under BMv2's header names (<bm/bm_sim/data.h>,
 * <bm/bm_sim/fields.h>, <bm/bm_sim/extern.h>, ...), so that a module written for
 * simple_switch's --load-modules builds unchanged.
 *
 * BMv2 computes on arbitrary-precision integers; koi's Data holds a 1024-bit two's complement
 * integer (koi_bm::Int), exact for every value of the parameters koi passes (at most 512 bits
 * wide) and for sums, differences and products of two of them. */
#ifndef KOI_BM_H
#define KOI_BM_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <stdexcept>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace koi_bm {

/* A signed integer of 1024 bits in two's complement, limbs least significant first. */
class Int {
 public:
  static constexpr int kLimbs = 16;
  static constexpr int kBits = kLimbs * 64;

  Int() { std::memset(w, 0, sizeof(w)); }

  template <typename T, typename std::enable_if<std::is_integral<T>::value, int>::type = 0>
  Int(T v) {  // NOLINT: implicit, as Bignum converts from integers
    if (std::is_signed<T>::value) {
      int64_t s = static_cast<int64_t>(v);
      uint64_t fill = s < 0 ? ~0ull : 0;
      for (auto &x : w) x = fill;
      w[0] = static_cast<uint64_t>(s);
    } else {
      std::memset(w, 0, sizeof(w));
      w[0] = static_cast<uint64_t>(v);
    }
  }

  bool negative() const { return (w[kLimbs - 1] >> 63) != 0; }
  bool is_zero() const {
    for (auto x : w)
      if (x) return false;
    return true;
  }
  int sign() const { return negative() ? -1 : (is_zero() ? 0 : 1); }

  bool test_bit(unsigned i) const { return i < kBits && ((w[i / 64] >> (i % 64)) & 1); }
  void set_bit(unsigned i, bool v) {
    if (i >= kBits) return;
    uint64_t m = 1ull << (i % 64);
    w[i / 64] = v ? (w[i / 64] | m) : (w[i / 64] & ~m);
  }

  /* Big-endian unsigned bytes in; the low `n` bytes out, big-endian. */
  static Int from_bytes(const unsigned char *b, size_t n) {
    Int r;
    for (size_t i = 0; i < n; i++) {
      size_t byte = n - 1 - i; /* position from the least significant end */
      if (byte < static_cast<size_t>(kLimbs) * 8)
        r.w[byte / 8] |= static_cast<uint64_t>(b[i]) << (8 * (byte % 8));
    }
    return r;
  }
  void to_bytes(unsigned char *b, size_t n) const {
    for (size_t i = 0; i < n; i++) {
      size_t byte = n - 1 - i;
      b[i] = byte < static_cast<size_t>(kLimbs) * 8
                 ? static_cast<unsigned char>(w[byte / 8] >> (8 * (byte % 8)))
                 : (negative() ? 0xff : 0);
    }
  }
  /* The bytes the magnitude of a non-negative value needs (at least one). */
  size_t min_bytes() const {
    for (int i = kBits - 1; i >= 0; i--)
      if (test_bit(static_cast<unsigned>(i))) return static_cast<size_t>(i) / 8 + 1;
    return 1;
  }

  template <typename T, typename std::enable_if<std::is_integral<T>::value, int>::type = 0>
  T convert_to() const {
    return static_cast<T>(w[0]);
  }

  friend Int operator~(const Int &a) {
    Int r;
    for (int i = 0; i < kLimbs; i++) r.w[i] = ~a.w[i];
    return r;
  }
  friend Int operator+(const Int &a, const Int &b) {
    Int r;
    unsigned __int128 c = 0;
    for (int i = 0; i < kLimbs; i++) {
      c += static_cast<unsigned __int128>(a.w[i]) + b.w[i];
      r.w[i] = static_cast<uint64_t>(c);
      c >>= 64;
    }
    return r;
  }
  friend Int operator-(const Int &a) { return ~a + Int(1); }
  friend Int operator-(const Int &a, const Int &b) { return a + (-b); }
  friend Int operator*(const Int &a, const Int &b) {
    Int r;
    for (int i = 0; i < kLimbs; i++) {
      unsigned __int128 c = 0;
      for (int j = 0; i + j < kLimbs; j++) {
        c += static_cast<unsigned __int128>(a.w[i]) * b.w[j] + r.w[i + j];
        r.w[i + j] = static_cast<uint64_t>(c);
        c >>= 64;
      }
    }
    return r;
  }
  friend Int operator&(const Int &a, const Int &b) {
    Int r;
    for (int i = 0; i < kLimbs; i++) r.w[i] = a.w[i] & b.w[i];
    return r;
  }
  friend Int operator|(const Int &a, const Int &b) {
    Int r;
    for (int i = 0; i < kLimbs; i++) r.w[i] = a.w[i] | b.w[i];
    return r;
  }
  friend Int operator^(const Int &a, const Int &b) {
    Int r;
    for (int i = 0; i < kLimbs; i++) r.w[i] = a.w[i] ^ b.w[i];
    return r;
  }
  friend Int operator<<(const Int &a, unsigned n) {
    Int r;
    if (n >= static_cast<unsigned>(kBits)) return r;
    unsigned limbs = n / 64, bits = n % 64;
    for (int i = kLimbs - 1; i >= static_cast<int>(limbs); i--) {
      uint64_t v = a.w[i - limbs] << bits;
      if (bits && i - static_cast<int>(limbs) - 1 >= 0) v |= a.w[i - limbs - 1] >> (64 - bits);
      r.w[i] = v;
    }
    return r;
  }
  /* Arithmetic (sign-filling) shift, as for Bignum's signed values. */
  friend Int operator>>(const Int &a, unsigned n) {
    uint64_t fill = a.negative() ? ~0ull : 0;
    Int r;
    for (auto &x : r.w) x = fill;
    if (n >= static_cast<unsigned>(kBits)) return r;
    unsigned limbs = n / 64, bits = n % 64;
    for (int i = 0; i + static_cast<int>(limbs) < kLimbs; i++) {
      uint64_t lo = a.w[i + limbs] >> bits;
      uint64_t hi = i + limbs + 1 < static_cast<unsigned>(kLimbs) ? a.w[i + limbs + 1] : fill;
      if (bits) lo |= hi << (64 - bits);
      r.w[i] = lo;
    }
    return r;
  }
  friend bool operator==(const Int &a, const Int &b) {
    return std::memcmp(a.w, b.w, sizeof(a.w)) == 0;
  }
  friend bool operator!=(const Int &a, const Int &b) { return !(a == b); }
  friend bool operator<(const Int &a, const Int &b) {
    if (a.negative() != b.negative()) return a.negative();
    for (int i = kLimbs - 1; i >= 0; i--)
      if (a.w[i] != b.w[i]) return a.w[i] < b.w[i];
    return false;
  }
  friend bool operator>(const Int &a, const Int &b) { return b < a; }
  friend bool operator<=(const Int &a, const Int &b) { return !(b < a); }
  friend bool operator>=(const Int &a, const Int &b) { return !(a < b); }

  /* Quotient and remainder truncated toward zero (as C's and Bignum's / and %). */
  static void divmod(const Int &a, const Int &b, Int *q, Int *r) {
    if (b.is_zero()) throw std::domain_error("division by zero");
    Int ua = a.negative() ? -a : a, ub = b.negative() ? -b : b;
    Int quo, rem;
    int top = kBits - 1;
    while (top >= 0 && !ua.test_bit(static_cast<unsigned>(top))) top--;
    for (int i = top; i >= 0; i--) {
      rem = rem << 1;
      rem.set_bit(0, ua.test_bit(static_cast<unsigned>(i)));
      if (!(rem < ub)) {
        rem = rem - ub;
        quo.set_bit(static_cast<unsigned>(i), true);
      }
    }
    if (q) *q = a.negative() != b.negative() ? -quo : quo;
    if (r) *r = a.negative() ? -rem : rem;
  }
  friend Int operator/(const Int &a, const Int &b) {
    Int q;
    divmod(a, b, &q, nullptr);
    return q;
  }
  friend Int operator%(const Int &a, const Int &b) {
    Int r;
    divmod(a, b, nullptr, &r);
    return r;
  }

  std::string decimal() const {
    if (is_zero()) return "0";
    Int v = negative() ? -*this : *this;
    std::string s;
    const Int chunk(1000000000000000000ull); /* 10^18: eighteen digits per division */
    while (!v.is_zero()) {
      Int q, r;
      divmod(v, chunk, &q, &r);
      uint64_t digits = r.w[0];
      for (int i = 0; i < 18 && (digits || !q.is_zero()); i++) {
        s.insert(s.begin(), static_cast<char>('0' + digits % 10));
        digits /= 10;
      }
      v = q;
    }
    if (negative()) s.insert(s.begin(), '-');
    return s;
  }
  friend std::ostream &operator<<(std::ostream &o, const Int &v) { return o << v.decimal(); }

  Int &operator+=(const Int &b) { return *this = *this + b; }
  Int &operator-=(const Int &b) { return *this = *this - b; }

 private:
  uint64_t w[kLimbs];
};

}  // namespace koi_bm

namespace bm {

using Bignum = koi_bm::Int;

/* Bytes, as BMv2's ByteContainer (a vector of char with a few helpers). */
class ByteContainer {
 public:
  using iterator = std::vector<char>::iterator;
  using const_iterator = std::vector<char>::const_iterator;
  ByteContainer() {}
  explicit ByteContainer(size_t n) : bytes(n, 0) {}
  ByteContainer(const char *b, size_t n) : bytes(b, b + n) {}
  explicit ByteContainer(const std::string &hex) {
    size_t i = hex.compare(0, 2, "0x") == 0 ? 2 : 0;
    auto digit = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      throw std::invalid_argument("not a hexadecimal digit");
    };
    if ((hex.size() - i) % 2) bytes.push_back(static_cast<char>(digit(hex[i++])));
    for (; i + 1 < hex.size(); i += 2)
      bytes.push_back(static_cast<char>(digit(hex[i]) * 16 + digit(hex[i + 1])));
  }
  size_t size() const { return bytes.size(); }
  bool empty() const { return bytes.empty(); }
  void clear() { bytes.clear(); }
  void resize(size_t n) { bytes.resize(n, 0); }
  void push_back(char c) { bytes.push_back(c); }
  ByteContainer &append(const char *b, size_t n) {
    bytes.insert(bytes.end(), b, b + n);
    return *this;
  }
  ByteContainer &append(const ByteContainer &o) { return append(o.data(), o.size()); }
  char *data() { return bytes.data(); }
  const char *data() const { return bytes.data(); }
  char &operator[](size_t i) { return bytes[i]; }
  const char &operator[](size_t i) const { return bytes[i]; }
  char &at(size_t i) { return bytes.at(i); }
  const char &at(size_t i) const { return bytes.at(i); }
  char &front() { return bytes.front(); }
  char &back() { return bytes.back(); }
  iterator begin() { return bytes.begin(); }
  iterator end() { return bytes.end(); }
  const_iterator begin() const { return bytes.begin(); }
  const_iterator end() const { return bytes.end(); }
  std::string to_hex(size_t start = 0, size_t n = static_cast<size_t>(-1),
                     bool upper = false) const {
    const char *d = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    std::string s;
    for (size_t i = start; i < bytes.size() && i - start < n; i++) {
      unsigned char c = static_cast<unsigned char>(bytes[i]);
      s.push_back(d[c >> 4]);
      s.push_back(d[c & 15]);
    }
    return s;
  }
  friend bool operator==(const ByteContainer &a, const ByteContainer &b) {
    return a.bytes == b.bytes;
  }
  friend bool operator!=(const ByteContainer &a, const ByteContainer &b) { return !(a == b); }

 private:
  std::vector<char> bytes;
};

/* A number, as BMv2's Data: the value of an expression passed to an extern function, and the
 * base of Field. */
class Data {
 public:
  Data() {}
  template <typename T, typename std::enable_if<std::is_integral<T>::value, int>::type = 0>
  explicit Data(T i) : value(i) {}
  Data(const char *bytes, int nbytes)
      : value(Bignum::from_bytes(reinterpret_cast<const unsigned char *>(bytes),
                                 static_cast<size_t>(nbytes))) {}
  explicit Data(const std::string &hexstring) { set(hexstring); }
  Data(const Data &o) = default;
  Data(Data &&o) = default;
  Data &operator=(const Data &o) = default;
  Data &operator=(Data &&o) = default;
  virtual ~Data() {}

  virtual void export_bytes() {}
  int sign() const { return value.sign(); }

  template <typename T, typename std::enable_if<std::is_integral<T>::value, int>::type = 0>
  void set(T i) {
    value = Bignum(i);
    export_bytes();
  }
  template <typename T, typename std::enable_if<std::is_enum<T>::value, int>::type = 0>
  void set(T i) {
    value = Bignum(static_cast<int>(i));
    export_bytes();
  }
  void set(const char *bytes, int nbytes) {
    value = Bignum::from_bytes(reinterpret_cast<const unsigned char *>(bytes),
                               static_cast<size_t>(nbytes));
    export_bytes();
  }
  void set(const Data &d) {
    value = d.value;
    export_bytes();
  }
  void set(const ByteContainer &bc) { set(bc.data(), static_cast<int>(bc.size())); }
  /* A hexadecimal string, optionally signed ("-") and prefixed ("0x"). */
  void set(const std::string &hexstring) {
    size_t i = 0;
    bool neg = !hexstring.empty() && hexstring[0] == '-';
    if (neg) i++;
    if (hexstring.compare(i, 2, "0x") == 0) i += 2;
    ByteContainer bc(hexstring.substr(i));
    value = Bignum::from_bytes(reinterpret_cast<const unsigned char *>(bc.data()), bc.size());
    if (neg) value = -value;
    export_bytes();
  }

  template <typename T, typename std::enable_if<std::is_integral<T>::value, int>::type = 0>
  T get() const {
    return value.convert_to<typename std::remove_const<T>::type>();
  }
  unsigned int get_uint() const { return value.convert_to<unsigned int>(); }
  uint64_t get_uint64() const { return value.convert_to<uint64_t>(); }
  int get_int() const { return value.convert_to<int>(); }
  /* The magnitude's bytes, big-endian, as few as hold it. */
  std::string get_string() const {
    std::string s(value.min_bytes(), '\0');
    value.to_bytes(reinterpret_cast<unsigned char *>(&s[0]), s.size());
    return s;
  }
  std::string get_string_repr() const { return value.decimal(); }
  bool get_arith() const { return arith; }

  void add(const Data &a, const Data &b) { assign(a.value + b.value); }
  void sub(const Data &a, const Data &b) { assign(a.value - b.value); }
  void multiply(const Data &a, const Data &b) { assign(a.value * b.value); }
  void mod(const Data &a, const Data &b) { assign(a.value % b.value); }
  void divide(const Data &a, const Data &b) { assign(a.value / b.value); }
  template <typename T, typename std::enable_if<std::is_integral<T>::value, int>::type = 0>
  void divide(const Data &a, const T &b) {
    assign(a.value / Bignum(b));
  }
  void shift_left(const Data &a, const Data &b) { assign(a.value << b.get_uint()); }
  void shift_right(const Data &a, const Data &b) { assign(a.value >> b.get_uint()); }
  void shift_left(const Data &a, unsigned int b) { assign(a.value << b); }
  void shift_right(const Data &a, unsigned int b) { assign(a.value >> b); }
  void bit_and(const Data &a, const Data &b) { assign(a.value & b.value); }
  void bit_or(const Data &a, const Data &b) { assign(a.value | b.value); }
  void bit_xor(const Data &a, const Data &b) { assign(a.value ^ b.value); }
  void bit_neg(const Data &a) { assign(~a.value); }
  /* `(int<width>) src`: src wrapped into [-2^(width-1), 2^(width-1)). */
  void two_comp_mod(const Data &src, const Data &width) {
    unsigned n = width.get_uint();
    Bignum one(1), mask = (one << n) - one, max = (one << (n - 1)) - one;
    Bignum v = src.value & mask;
    if (v > max) v -= one << n;
    assign(v);
  }
  /* Saturating casts to bit<width> and int<width>. */
  void usat_cast(const Data &src, const Data &width) {
    Bignum max = (Bignum(1) << width.get_uint()) - Bignum(1);
    assign(src.value > max ? max : (src.value.negative() ? Bignum(0) : src.value));
  }
  void sat_cast(const Data &src, const Data &width) {
    Bignum half = Bignum(1) << (width.get_uint() - 1), max = half - Bignum(1), min = -half;
    assign(src.value > max ? max : (src.value < min ? min : src.value));
  }

  template <typename T, typename std::enable_if<std::is_integral<T>::value, int>::type = 0>
  bool test_eq(T i) const {
    return value == Bignum(i);
  }
  friend bool operator==(const Data &a, const Data &b) { return a.value == b.value; }
  friend bool operator!=(const Data &a, const Data &b) { return !(a == b); }
  template <typename T, typename std::enable_if<std::is_integral<T>::value, int>::type = 0>
  friend bool operator==(const Data &a, const T &b) {
    return a.value.convert_to<T>() == b;
  }
  template <typename T, typename std::enable_if<std::is_integral<T>::value, int>::type = 0>
  friend bool operator!=(const Data &a, const T &b) {
    return !(a == b);
  }
  friend bool operator<(const Data &a, const Data &b) { return a.value < b.value; }
  friend bool operator>(const Data &a, const Data &b) { return a.value > b.value; }
  friend bool operator<=(const Data &a, const Data &b) { return a.value <= b.value; }
  friend bool operator>=(const Data &a, const Data &b) { return a.value >= b.value; }
  template <typename T, typename std::enable_if<std::is_integral<T>::value, int>::type = 0>
  friend T operator%(const Data &a, const T &b) {
    return (a.value % Bignum(b)).template convert_to<T>();
  }
  friend std::ostream &operator<<(std::ostream &o, const Data &d) { return o << d.value; }

 protected:
  void assign(const Bignum &v) {
    value = v;
    export_bytes();
  }
  Bignum value{0};
  bool arith{true};
};

class Header;

/* BMv2's base of extern object types, which koi does not run (see BM_REGISTER_EXTERN). */
class ExternType {
 public:
  virtual ~ExternType() {}
  virtual void init() {}
};

/* A P4 field (an out or inout argument, or any argument's value with its width): setting it
 * keeps the value in the field's range, as BMv2 does (bit<N> modulo 2^N, int<N> wrapped in
 * two's complement, saturating fields clamped). */
class Field : public Data {
 public:
  explicit Field(int nbits, Header *parent_hdr = nullptr, bool arith_flag = true,
                 bool is_signed = false, bool hidden = false, bool VL = false,
                 bool is_saturating = false)
      : nbits(nbits),
        nbytes((nbits + 7) / 8),
        bytes(static_cast<size_t>((nbits + 7) / 8)),
        is_signed(is_signed),
        hidden(hidden),
        VL(VL),
        is_saturating(is_saturating) {
    (void)parent_hdr;
    arith = arith_flag;
  }

  void export_bytes() override {
    Bignum one(1), mask = (Bignum(1) << static_cast<unsigned>(nbits)) - one;
    Bignum v = value;
    if (is_saturating) {
      Bignum max = is_signed ? (one << static_cast<unsigned>(nbits - 1)) - one : mask;
      Bignum min = is_signed ? -(one << static_cast<unsigned>(nbits - 1)) : Bignum(0);
      v = v > max ? max : (v < min ? min : v);
    }
    v = v & mask;
    bytes.resize(static_cast<size_t>(nbytes));
    v.to_bytes(reinterpret_cast<unsigned char *>(bytes.data()), static_cast<size_t>(nbytes));
    if (is_signed && nbits > 0 && v.test_bit(static_cast<unsigned>(nbits - 1)))
      v -= one << static_cast<unsigned>(nbits);
    value = v;
    written_to = true;
  }
  void set_bytes(const char *src, int len) {
    value = Bignum::from_bytes(reinterpret_cast<const unsigned char *>(src),
                               static_cast<size_t>(len));
    export_bytes();
  }
  void sync_value() {
    set_bytes(bytes.data(), nbytes);
  }
  const ByteContainer &get_bytes() const { return bytes; }
  int get_nbytes() const { return nbytes; }
  int get_nbits() const { return nbits; }
  void set_arith(bool a) { arith = a; }
  bool get_arith_flag() const { return arith; }
  bool is_hidden() const { return hidden; }
  bool is_VL() const { return VL; }
  bool is_signed_field() const { return is_signed; }
  void set_written_to(bool v) { written_to = v; }
  bool get_written_to() const { return written_to; }

 private:
  int nbits;
  int nbytes;
  ByteContainer bytes;
  bool is_signed;
  bool hidden;
  bool VL;
  bool is_saturating;
  bool written_to{false};
};

}  // namespace bm

namespace koi_bm {

/* The registered extern functions of the module. */
struct Registered {
  const char *name;
  size_t arity;
  std::function<void(bm::Field *const *)> invoke;
};

inline std::vector<Registered> &registry() {
  static std::vector<Registered> r;
  return r;
}

template <typename T>
struct Param {
  static_assert(sizeof(T) == 0,
                "koi passes BMv2 extern functions bm::Field & (an out or inout P4 argument, "
                "or any argument) or bm::Data (const &, &, or by value) parameters");
};
template <>
struct Param<bm::Field &> {
  static bm::Field &get(bm::Field *f) { return *f; }
};
template <>
struct Param<const bm::Field &> {
  static const bm::Field &get(bm::Field *f) { return *f; }
};
template <>
struct Param<bm::Data &> {
  static bm::Data &get(bm::Field *f) { return *f; }
};
template <>
struct Param<const bm::Data &> {
  static const bm::Data &get(bm::Field *f) { return *f; }
};
template <>
struct Param<bm::Data> {
  static bm::Data get(bm::Field *f) { return bm::Data(*f); }
};
template <>
struct Param<const bm::Data> {
  static bm::Data get(bm::Field *f) { return bm::Data(*f); }
};

template <typename... A>
struct Registrar {
  template <size_t... I>
  static void call(void (*f)(A...), bm::Field *const *a, std::index_sequence<I...>) {
    (void)a;
    f(Param<A>::get(a[I])...);
  }
  static bool add(const char *name, void (*f)(A...)) {
    registry().push_back({name, sizeof...(A), [f](bm::Field *const *a) {
                            call(f, a, std::index_sequence_for<A...>{});
                          }});
    return true;
  }
};

template <typename T>
struct always_false : std::false_type {};

/* The glue koi's generated entry points use: a P4 argument in koi's C layout (a scalar in
 * host byte order up to 64 bits, a big-endian byte array above) into a Field and back, and
 * calls that turn a C++ exception into an error koi reports. */
inline void load_int(bm::Field &f, const void *p, size_t bytes, bool is_signed) {
  uint64_t u = 0;
  int64_t s = 0;
  switch (bytes) {
    case 1: { uint8_t v; std::memcpy(&v, p, 1); u = v; s = static_cast<int8_t>(v); break; }
    case 2: { uint16_t v; std::memcpy(&v, p, 2); u = v; s = static_cast<int16_t>(v); break; }
    case 4: { uint32_t v; std::memcpy(&v, p, 4); u = v; s = static_cast<int32_t>(v); break; }
    default: { uint64_t v; std::memcpy(&v, p, 8); u = v; s = static_cast<int64_t>(v); break; }
  }
  if (is_signed)
    f.set(s);
  else
    f.set(u);
}

inline void store_int(const bm::Field &f, void *p, size_t bytes) {
  uint64_t u = f.get<uint64_t>();
  switch (bytes) {
    case 1: { uint8_t v = static_cast<uint8_t>(u); std::memcpy(p, &v, 1); break; }
    case 2: { uint16_t v = static_cast<uint16_t>(u); std::memcpy(p, &v, 2); break; }
    case 4: { uint32_t v = static_cast<uint32_t>(u); std::memcpy(p, &v, 4); break; }
    default: std::memcpy(p, &u, 8); break;
  }
}

inline void load_wide(bm::Field &f, const void *p, size_t nbytes) {
  f.set_bytes(static_cast<const char *>(p), static_cast<int>(nbytes));
}

inline void store_wide(const bm::Field &f, void *p, size_t nbytes) {
  std::memcpy(p, f.get_bytes().data(), nbytes);
}

/* The function registered as `name`, or null. */
inline const Registered *lookup(const char *name) {
  for (const auto &r : registry())
    if (std::strcmp(r.name, name) == 0) return &r;
  return nullptr;
}

/* Why the module cannot implement `name` with `arity` parameters (null: it can). */
inline const char *check(const char *name, size_t arity) {
  static thread_local std::string why;
  size_t n = 0;
  const Registered *r = nullptr;
  for (const auto &x : registry())
    if (std::strcmp(x.name, name) == 0) {
      n++;
      r = &x;
    }
  if (n == 0) {
    why = std::string("the module registers no extern function ") + name +
          " (BM_REGISTER_EXTERN_FUNCTION(" + name + ", ...))";
    return why.c_str();
  }
  if (n > 1) {
    why = std::string("the module registers ") + name + " more than once";
    return why.c_str();
  }
  if (r->arity != arity) {
    why = std::string(name) + " is registered with " + std::to_string(r->arity) +
          " parameters and declared in P4 with " + std::to_string(arity);
    return why.c_str();
  }
  return nullptr;
}

inline std::string &last_error() {
  static thread_local std::string e;
  return e;
}

inline void invoke(const char *name, bm::Field *const *args) {
  try {
    const Registered *r = lookup(name);
    if (!r) throw std::runtime_error("not registered");
    r->invoke(args);
  } catch (const std::exception &e) {
    last_error() = e.what();
  } catch (...) {
    last_error() = "threw an exception";
  }
}

/* The error of the last call on this thread (null: none), cleared. */
inline const char *take_error() {
  static thread_local std::string taken;
  if (last_error().empty()) return nullptr;
  taken = std::move(last_error());
  last_error().clear();
  return taken.c_str();
}

}  // namespace koi_bm

#define BM_REGISTER_EXTERN_FUNCTION(extern_name, ...)                       \
  static const bool koi_bm_registered_##extern_name##_ __attribute__((unused)) = \
      ::koi_bm::Registrar<__VA_ARGS__>::add(#extern_name, &extern_name)

/* Extern object types (BMv2's ExternType) are not P4 extern functions. */
#define BM_REGISTER_EXTERN(extern_name)                                              \
  static_assert(::koi_bm::always_false<int>::value,                                 \
                "koi runs BMv2 extern functions (BM_REGISTER_EXTERN_FUNCTION), not "    \
                "extern object types (BM_REGISTER_EXTERN)")
#define BM_REGISTER_EXTERN_METHOD(extern_name, extern_method_name, ...)
#define BM_EXTERN_ATTRIBUTES void koi_bm_no_attributes_()
#define BM_EXTERN_ATTRIBUTE_ADD(name)

/* BMv2's logging macros: koi's extern modules log nothing. */
#define BMLOG_DEBUG(...) ((void)0)
#define BMLOG_TRACE(...) ((void)0)
#define BMLOG_INFO(...) ((void)0)
#define BMLOG_WARN(...) ((void)0)
#define BMLOG_ERROR(...) ((void)0)
#define BMLOG_DEBUG_PKT(...) ((void)0)
#define BMLOG_TRACE_PKT(...) ((void)0)
#define BMLOG_ERROR_PKT(...) ((void)0)

#endif /* KOI_BM_H */
