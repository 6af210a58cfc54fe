/* CRC-32C (Kafka's v2 batches: slice-by-8, or SSE4.2 three streams at a time) and CRC-32 IEEE
 * (legacy messages), and the crc32c() entry point. */

#include "_native_shared.h"

static uint32_t crc32c_table[8][256];
static uint32_t crc32_table[8][256];
static int use_hw_crc32c = 0;

static void make_tables(uint32_t table[8][256], uint32_t poly) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (poly ^ (c >> 1)) : (c >> 1);
        table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = table[0][n];
        for (int k = 1; k < 8; k++) {
            c = table[0][c & 0xff] ^ (c >> 8);
            table[k][n] = c;
        }
    }
}

/* slice-by-8, reflected polynomials (CRC-32 IEEE and CRC-32C) */
static uint32_t crc_soft(uint32_t table[8][256], const uint8_t *p, size_t n) {
    uint32_t crc = 0xFFFFFFFFu;
    while (n && ((uintptr_t)p & 7)) { crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8); n--; }
    while (n >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        lo = __builtin_bswap32(lo);
        hi = __builtin_bswap32(hi);
#endif
        lo ^= crc;
        crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
              table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
              table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc ^ 0xFFFFFFFFu;
}

#ifdef HAVE_SSE42_CRC
/* Hardware CRC-32C, three streams at a time: the crc32 instruction has a latency of three
 * cycles but a throughput of one, so three independent streams run three times faster; each
 * block's CRC is then moved past the following blocks' length with a "append that many zero
 * bytes" operator (a 32x32 GF(2) matrix, turned into byte tables) and combined. */
#define CRC_LONG 8192
#define CRC_SHORT 256
static uint32_t crc32c_long[4][256], crc32c_short[4][256];

static uint32_t gf2_times(const uint32_t *mat, uint32_t vec) {
    uint32_t sum = 0;
    for (; vec; vec >>= 1, mat++)
        if (vec & 1) sum ^= *mat;
    return sum;
}

static void gf2_square(uint32_t *square, const uint32_t *mat) {
    for (int n = 0; n < 32; n++) square[n] = gf2_times(mat, mat[n]);
}

/* The operator appending len zero bytes (len a power of two) to a raw CRC-32C register. */
static void zeros_operator(uint32_t *even, size_t len) {
    uint32_t odd[32], row = 1;
    odd[0] = 0x82F63B78u;  /* one zero bit */
    for (int n = 1; n < 32; n++, row <<= 1) odd[n] = row;
    gf2_square(even, odd);  /* two bits */
    gf2_square(odd, even);  /* four bits */
    for (;;) {
        gf2_square(even, odd);  /* 8, 32, 128 ... bits */
        len >>= 1;
        if (!len) return;
        gf2_square(odd, even);
        len >>= 1;
        if (!len) break;
    }
    memcpy(even, odd, sizeof odd);
}

static void make_zeros_tables(uint32_t zeros[4][256], size_t len) {
    uint32_t op[32];
    zeros_operator(op, len);
    for (uint32_t n = 0; n < 256; n++)
        for (int k = 0; k < 4; k++) zeros[k][n] = gf2_times(op, n << (8 * k));
}

static inline uint32_t crc_shift(uint32_t zeros[4][256], uint32_t crc) {
    return zeros[0][crc & 0xff] ^ zeros[1][(crc >> 8) & 0xff] ^ zeros[2][(crc >> 16) & 0xff] ^ zeros[3][crc >> 24];
}

static inline uint64_t load64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(const uint8_t *p, size_t n) {
    uint64_t crc0 = 0xFFFFFFFFu;
    while (n && ((uintptr_t)p & 7)) { crc0 = _mm_crc32_u8((uint32_t)crc0, *p++); n--; }
    while (n >= 3 * CRC_LONG) {
        uint64_t crc1 = 0, crc2 = 0;
        const uint8_t *end = p + CRC_LONG;
        do {
            crc0 = _mm_crc32_u64(crc0, load64(p));
            crc1 = _mm_crc32_u64(crc1, load64(p + CRC_LONG));
            crc2 = _mm_crc32_u64(crc2, load64(p + 2 * CRC_LONG));
            p += 8;
        } while (p < end);
        crc0 = crc_shift(crc32c_long, (uint32_t)crc0) ^ (uint32_t)crc1;
        crc0 = crc_shift(crc32c_long, (uint32_t)crc0) ^ (uint32_t)crc2;
        p += 2 * CRC_LONG;
        n -= 3 * CRC_LONG;
    }
    while (n >= 3 * CRC_SHORT) {
        uint64_t crc1 = 0, crc2 = 0;
        const uint8_t *end = p + CRC_SHORT;
        do {
            crc0 = _mm_crc32_u64(crc0, load64(p));
            crc1 = _mm_crc32_u64(crc1, load64(p + CRC_SHORT));
            crc2 = _mm_crc32_u64(crc2, load64(p + 2 * CRC_SHORT));
            p += 8;
        } while (p < end);
        crc0 = crc_shift(crc32c_short, (uint32_t)crc0) ^ (uint32_t)crc1;
        crc0 = crc_shift(crc32c_short, (uint32_t)crc0) ^ (uint32_t)crc2;
        p += 2 * CRC_SHORT;
        n -= 3 * CRC_SHORT;
    }
    while (n >= 8) {
        crc0 = _mm_crc32_u64(crc0, load64(p));
        p += 8;
        n -= 8;
    }
    while (n--) crc0 = _mm_crc32_u8((uint32_t)crc0, *p++);
    return (uint32_t)crc0 ^ 0xFFFFFFFFu;
}
#endif

uint32_t crc32c(const uint8_t *p, size_t n) {
#ifdef HAVE_SSE42_CRC
    if (use_hw_crc32c) return crc32c_hw(p, n);
#endif
    return crc_soft(crc32c_table, p, n);
}

uint32_t crc32_ieee(const uint8_t *p, size_t n) { return crc_soft(crc32_table, p, n); }

void crc_init(void) {
    make_tables(crc32c_table, 0x82F63B78u);
    make_tables(crc32_table, 0xEDB88320u);
#ifdef HAVE_SSE42_CRC
    __builtin_cpu_init();
    use_hw_crc32c = __builtin_cpu_supports("sse4.2");
    make_zeros_tables(crc32c_long, CRC_LONG);
    make_zeros_tables(crc32c_short, CRC_SHORT);
#endif
}

PyObject *native_crc32c(PyObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    uint32_t crc = crc32c((const uint8_t *)view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}
