/*
 * seglog_cli.storage.log._native: the optional compiled hot loops of the storage engine and of the
 * text renderer.
 *
 * The pure-Python code is the reference: batches.py (framing), batch_header.py (headers),
 * records.py (records), render/text.py (DumpLogSegments' lines). tests/storage/log/test_native.py
 * checks that both paths give identical results on broker-written files and on generated and
 * damaged input. These functions only ever handle clean input: at anything else they stop (or
 * return None) and the Python code takes over, so Kafka's exact error semantics live in one place.
 *
 * Framing
 *   scan(header_type, buffer, pos, end, check_crc, max_count) -> (headers, next_pos)
 *   walk(buffer, pos, end, max_count) -> (next_pos, count, last_next_offset)
 *       Consecutive well-framed entries from pos (v2 batches of >= 61 bytes, legacy entries);
 *       scan builds header_type instances (a tuple subclass in BatchHeader's field order, the
 *       computed CRC last), walk only skips over them. Both stop before an entry whose size
 *       field is below 14, one that runs past end, a v2 entry under 61 bytes, or when 17 or
 *       fewer bytes remain: the cases batches.LogScan judges in Python.
 * Records
 *   decode_v2(record_type, data, count, base_offset, base_timestamp, base_sequence,
 *             log_append_time, timestamp_type, stream) -> list | None
 *   decode_v2_batch(record_type, buffer, batch) -> list | None
 *       The records of a v2 records section (decompressed) or of an uncompressed batch read
 *       from the mapped file; None when anything is off.
 *   check_run(header_type, buffer, headers, start, last_offset, gaps, decompress)
 *       -> (done, last_offset, sections, first_offset)
 *       Confirms that headers[start:done] are v2 data batches whose records decode cleanly,
 *       without building a record; appends DumpLogSegments' non-consecutive offset pairs to
 *       gaps; sections[i] is the decompressed records section of a compressed batch (or None);
 *       first_offset: the offset of the run's first record (None when it has none).
 * Text (DumpLogSegments 4.2)
 *   batch_line(batch) -> bytes;  batch_lines(buffer, pos, end, check_crc) -> bytes
 *   record_line(record, batch, print_data_log, skip_record_metadata) -> bytes | None
 *   render_lines(header_type, record_type, items, start, batch, print_data_log, skip)
 *       -> (bytes, done, batch)
 *   deep_lines(buffer, headers, sections, start, print_data_log, skip) -> (bytes, done)
 *       Formats with the GIL released (threads format in parallel). Lines are joined by
 *       newlines, without a trailing one. A record line is refused (None, or an early stop)
 *       when a key, value or header key is not valid UTF-8: the Python renderer then applies
 *       Java's replacement rules.
 *   crc32c(data) -> int
 * Columns (the Spark reader)
 *   columns_run(buffer, chunk, index, split_end, skip_invalid, max_rows, payload, max_payload,
 *               columns, decompress, expected) -> (next_index, reason, payload)
 *       The records of a chunk's clean v2 data batches appended to Arrow-ready column buffers,
 *       with their batches' values repeated per record; it stops at anything else.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <limits.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define HAVE_SSE42_CRC 1
#endif

/* ==== checksums ============================================================================ */

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

static uint32_t crc32c(const uint8_t *p, size_t n) {
#ifdef HAVE_SSE42_CRC
    if (use_hw_crc32c) return crc32c_hw(p, n);
#endif
    return crc_soft(crc32c_table, p, n);
}

/* ==== primitives =========================================================================== */

static inline int64_t be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return (int64_t)v;
}
static inline int32_t be32(const uint8_t *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]);
}
static inline int16_t be16(const uint8_t *p) { return (int16_t)(((uint16_t)p[0] << 8) | p[1]); }

static inline int32_t java_int(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }
static inline int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

/* DefaultRecordBatch.incrementSequence, in Java int arithmetic */
static int32_t increment_sequence(int32_t sequence, int32_t increment) {
    int32_t limit = java_int((int64_t)INT32_MAX - (int64_t)increment);
    if (sequence > limit) {
        int32_t gap = java_int((int64_t)INT32_MAX - (int64_t)sequence);
        return java_int((int64_t)increment - (int64_t)gap - 1);
    }
    return java_int((int64_t)sequence + (int64_t)increment);
}

/* zig-zag varints with Kafka's 5 / 10 byte limits; 0 when malformed or past limit */
static inline int read_varint(const uint8_t *p, Py_ssize_t limit, Py_ssize_t *pos, int32_t *out) {
    uint32_t raw = 0;
    int shift = 0;
    for (int i = 0; i < 5; i++) {
        if (*pos >= limit) return 0;
        uint8_t byte = p[(*pos)++];
        raw |= (uint32_t)(byte & 0x7f) << shift;
        if (byte < 0x80) {
            *out = (int32_t)((raw >> 1) ^ (uint32_t)-(int32_t)(raw & 1));
            return 1;
        }
        shift += 7;
    }
    return 0;
}

static inline int read_varlong(const uint8_t *p, Py_ssize_t limit, Py_ssize_t *pos, int64_t *out) {
    uint64_t raw = 0;
    int shift = 0;
    for (int i = 0; i < 10; i++) {
        if (*pos >= limit) return 0;
        uint8_t byte = p[(*pos)++];
        raw |= (uint64_t)(byte & 0x7f) << shift;
        if (byte < 0x80) {
            *out = (int64_t)((raw >> 1) ^ (uint64_t)-(int64_t)(raw & 1));
            return 1;
        }
        shift += 7;
    }
    return 0;
}

/* ==== headers ============================================================================== */

/* The fields of a BatchHeader, however they were obtained. */
typedef struct {
    long long position, base_offset, length, ple, magic, crc, attributes, lod, base_ts, max_ts,
        pid, pepoch, bseq, count, computed;
    int has_count, has_computed;
} Header;

static long long item_ll(PyObject *t, Py_ssize_t i, int *ok) {
    long long r = PyLong_AsLongLong(PyTuple_GET_ITEM(t, i));
    if (r == -1 && PyErr_Occurred()) *ok = 0;
    return r;
}

static int header_from_tuple(PyObject *t, Header *h) {
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 15) {
        PyErr_SetString(PyExc_TypeError, "a BatchHeader was expected");
        return 0;
    }
    int ok = 1;
    h->position = item_ll(t, 0, &ok); h->base_offset = item_ll(t, 1, &ok); h->length = item_ll(t, 2, &ok);
    h->ple = item_ll(t, 3, &ok); h->magic = item_ll(t, 4, &ok); h->crc = item_ll(t, 5, &ok);
    h->attributes = item_ll(t, 6, &ok); h->lod = item_ll(t, 7, &ok); h->base_ts = item_ll(t, 8, &ok);
    h->max_ts = item_ll(t, 9, &ok); h->pid = item_ll(t, 10, &ok); h->pepoch = item_ll(t, 11, &ok);
    h->bseq = item_ll(t, 12, &ok);
    h->has_count = PyTuple_GET_ITEM(t, 13) != Py_None;
    h->count = h->has_count ? item_ll(t, 13, &ok) : 0;
    h->has_computed = PyTuple_GET_ITEM(t, 14) != Py_None;
    h->computed = h->has_computed ? item_ll(t, 14, &ok) : 0;
    return ok;
}

/* From the file bytes of a well-framed entry (batch_header.read_batch_header's rules). */
static void header_from_bytes(const uint8_t *b, Py_ssize_t pos, Py_ssize_t entry_size,
                              Py_ssize_t available, int check_crc, Header *h) {
    h->position = pos;
    h->base_offset = be64(b);
    h->length = be32(b + 8);
    h->magic = (int8_t)b[16];
    h->has_computed = check_crc;
    if (h->magic >= 2) {
        h->ple = be32(b + 12); h->crc = (uint32_t)be32(b + 17); h->attributes = be16(b + 21);
        h->lod = be32(b + 23); h->base_ts = be64(b + 27); h->max_ts = be64(b + 35);
        h->pid = be64(b + 43); h->pepoch = be16(b + 51); h->bseq = be32(b + 53);
        h->count = be32(b + 57); h->has_count = 1;
        h->computed = check_crc ? crc32c(b + 21, (size_t)(entry_size - 21)) : 0;
    } else {
        long long timestamp = -1;
        if (h->magic != 0) {  /* at +18, what exists of it, zero-padded */
            uint8_t tmp[8] = {0};
            Py_ssize_t have = available - 18;
            if (have > 8) have = 8;
            if (have > 0) memcpy(tmp, b + 18, (size_t)have);
            timestamp = be64(tmp);
        }
        h->ple = -1; h->crc = (uint32_t)be32(b + 12); h->attributes = b[17]; h->lod = 0;
        h->base_ts = h->max_ts = timestamp; h->pid = -1; h->pepoch = -1; h->bseq = -1;
        h->count = 0; h->has_count = 0;
        h->computed = check_crc ? crc_soft(crc32_table, b + 16, (size_t)(entry_size - 16)) : 0;
    }
}

static PyObject *make_header(PyTypeObject *type, const Header *h) {
    PyObject *t = type->tp_alloc(type, 15);
    if (!t) return NULL;
    long long values[14] = {h->position, h->base_offset, h->length, h->ple, h->magic, h->crc,
                            h->attributes, h->lod, h->base_ts, h->max_ts, h->pid, h->pepoch,
                            h->bseq, h->count};
    for (int i = 0; i < 15; i++) {
        PyObject *v;
        if ((i == 13 && !h->has_count) || (i == 14 && !h->has_computed)) {
            v = Py_None;
            Py_INCREF(v);
        } else {
            v = PyLong_FromLongLong(i == 14 ? (long long)(uint32_t)h->computed : values[i]);
        }
        if (!v) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, i, v);
    }
    PyObject_GC_UnTrack(t); /* ints and None only: never part of a cycle */
    return t;
}

/* The size of the entry at pos when it is well-framed, else -1 (the Python scanner judges it). */
static inline Py_ssize_t clean_entry_size(const uint8_t *data, Py_ssize_t pos, Py_ssize_t end) {
    if (pos < 0 || pos >= end - 17) return -1;
    int32_t size = be32(data + pos + 8);
    if (size < 14 || pos + 12 + (Py_ssize_t)size > end) return -1;
    if ((int8_t)data[pos + 16] >= 2 && size < 49) return -1;
    return 12 + (Py_ssize_t)size;
}

/* ==== records ============================================================================== */

typedef struct {
    int64_t base_offset, base_timestamp, log_append_time;
    int32_t base_sequence;
    int have_lat, stream;
} BatchContext;

typedef struct {
    int64_t offset, timestamp;
    int32_t sequence, header_count;
    Py_ssize_t size_in_bytes, key_len, value_len, headers_len;
    const uint8_t *key, *value, *headers;  /* key/value NULL when null */
} RawRecord;

/* Reads one record at *pos; 1 when it is clean (Kafka would read it without complaint and its
 * offset and timestamp fit a Java long without wrapping), else 0. */
static int parse_record(const uint8_t *p, Py_ssize_t n, Py_ssize_t *pos, const BatchContext *c, RawRecord *r) {
    int32_t length, offset_delta, size;
    int64_t timestamp_delta;
    if (!read_varint(p, n, pos, &length) || length < 0 || (Py_ssize_t)length > n - *pos) return 0;
    Py_ssize_t body_start = *pos;
    Py_ssize_t limit = c->stream ? *pos + length : n;
    *pos += 1; /* attributes */
    if (*pos > limit || !read_varlong(p, limit, pos, &timestamp_delta) ||
        !read_varint(p, limit, pos, &offset_delta))
        return 0;
    if (!read_varint(p, limit, pos, &size)) return 0;
    if (size >= 0) {
        if ((Py_ssize_t)size > limit - *pos) return 0;
        r->key = p + *pos; r->key_len = size; *pos += size;
    } else { r->key = NULL; r->key_len = -1; }
    if (!read_varint(p, limit, pos, &size)) return 0;
    if (size >= 0) {
        if ((Py_ssize_t)size > limit - *pos) return 0;
        r->value = p + *pos; r->value_len = size; *pos += size;
    } else { r->value = NULL; r->value_len = -1; }
    if (!read_varint(p, limit, pos, &r->header_count) || r->header_count < 0 || r->header_count > limit - *pos)
        return 0;
    r->headers = p + *pos;
    for (int32_t h = 0; h < r->header_count; h++) {
        if (!read_varint(p, limit, pos, &size) || size < 0 || (Py_ssize_t)size > limit - *pos) return 0;
        *pos += size;
        if (!read_varint(p, limit, pos, &size)) return 0;
        if (size >= 0) {
            if ((Py_ssize_t)size > limit - *pos) return 0;
            *pos += size;
        }
    }
    r->headers_len = (p + *pos) - r->headers;
    if (*pos - body_start != length || *pos > limit) return 0;
    if (__builtin_add_overflow(c->base_offset, (int64_t)offset_delta, &r->offset)) return 0;
    if (c->have_lat) r->timestamp = c->log_append_time;
    else if (__builtin_add_overflow(c->base_timestamp, timestamp_delta, &r->timestamp)) return 0;
    r->sequence = c->base_sequence >= 0 ? increment_sequence(c->base_sequence, offset_delta) : -1;
    uint32_t raw = ((uint32_t)length << 1) ^ (uint32_t)(length >> 31);
    Py_ssize_t varint_size = 1;
    while (raw >= 0x80) { raw >>= 7; varint_size++; }
    r->size_in_bytes = varint_size + length;
    return 1;
}

/* The next header of a record already checked by parse_record. */
static void next_header(const uint8_t *h, Py_ssize_t *pos, const uint8_t **key, int32_t *key_len,
                        const uint8_t **value, int32_t *value_len) {
    read_varint(h, PY_SSIZE_T_MAX, pos, key_len);
    *key = h + *pos;
    *pos += *key_len;
    read_varint(h, PY_SSIZE_T_MAX, pos, value_len);
    *value = *value_len >= 0 ? h + *pos : NULL;
    if (*value_len > 0) *pos += *value_len;
}

static PyObject *bytes_or_none(const uint8_t *p, Py_ssize_t n) {
    if (!p) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)p, n);
}

static PyObject *make_record(PyTypeObject *type, const RawRecord *r, int timestamp_type) {
    PyObject *headers = PyTuple_New(r->header_count);
    if (!headers) return NULL;
    Py_ssize_t hpos = 0;
    for (int32_t i = 0; i < r->header_count; i++) {
        const uint8_t *key, *value;
        int32_t key_len, value_len;
        next_header(r->headers, &hpos, &key, &key_len, &value, &value_len);
        PyObject *k = PyBytes_FromStringAndSize((const char *)key, key_len);
        PyObject *v = bytes_or_none(value, value_len);
        PyObject *pair = (k && v) ? PyTuple_Pack(2, k, v) : NULL;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (!pair) { Py_DECREF(headers); return NULL; }
        PyObject_GC_UnTrack(pair); /* bytes and None only */
        PyTuple_SET_ITEM(headers, i, pair);
    }
    PyObject_GC_UnTrack(headers);
    PyObject *items[11] = {
        PyLong_FromLongLong(r->offset), PyLong_FromLongLong(r->timestamp), PyLong_FromLong(timestamp_type),
        bytes_or_none(r->key, r->key_len), bytes_or_none(r->value, r->value_len), headers,
        PyLong_FromLong(r->sequence), PyLong_FromSsize_t(r->size_in_bytes), Py_None, Py_True,
        PyLong_FromLong(2)};
    Py_INCREF(Py_None);
    Py_INCREF(Py_True);
    PyObject *rec = type->tp_alloc(type, 11);
    int failed = rec == NULL;
    for (int k = 0; k < 11; k++) {
        if (!items[k]) failed = 1;
        if (rec) PyTuple_SET_ITEM(rec, k, items[k]);
        else Py_XDECREF(items[k]);
    }
    if (failed) {
        Py_XDECREF(rec);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return NULL;
    }
    PyObject_GC_UnTrack(rec); /* ints, bytes, None and an untracked tuple */
    return rec;
}

/* A new list of records, Py_None (new reference) when the section is not clean, or NULL. */
static PyObject *decode_records(PyTypeObject *type, const uint8_t *p, Py_ssize_t n, Py_ssize_t count,
                                const BatchContext *c, int timestamp_type) {
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    Py_ssize_t pos = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        RawRecord r;
        if (!parse_record(p, n, &pos, c, &r)) { Py_DECREF(list); Py_RETURN_NONE; }
        PyObject *rec = make_record(type, &r, timestamp_type);
        if (!rec || PyList_Append(list, rec) < 0) { Py_XDECREF(rec); Py_DECREF(list); return NULL; }
        Py_DECREF(rec);
    }
    if (pos != n) { Py_DECREF(list); Py_RETURN_NONE; }
    return list;
}

static BatchContext context_of(const Header *h, int stream) {
    BatchContext c = {h->base_offset, h->base_ts, h->max_ts, (int32_t)h->bseq, (h->attributes & 0x08) != 0, stream};
    return c;
}

/* ==== text ================================================================================= */

/* Text built in a growing buffer. The raw allocator, so lines can be formatted with the GIL
 * released (``nogil``: a failure sets no exception; the caller raises once it holds the GIL). */
typedef struct { char *buf; Py_ssize_t len, cap; int nogil; } Out;

static int out_reserve(Out *o, Py_ssize_t extra) {
    if (o->len + extra <= o->cap) return 1;
    Py_ssize_t cap = o->cap ? o->cap : 256;
    while (cap < o->len + extra) cap *= 2;
    char *b = PyMem_RawRealloc(o->buf, (size_t)cap);
    if (!b) { if (!o->nogil) PyErr_NoMemory(); return 0; }
    o->buf = b;
    o->cap = cap;
    return 1;
}
static inline int out_put(Out *o, const void *s, Py_ssize_t n) {
    if (o->len + n > o->cap && !out_reserve(o, n)) return 0;
    memcpy(o->buf + o->len, s, (size_t)n);
    o->len += n;
    return 1;
}
static int out_str(Out *o, const char *s) { return out_put(o, s, (Py_ssize_t)strlen(s)); }
#define OUT_LIT(o, lit) out_put((o), (lit), (Py_ssize_t)(sizeof(lit) - 1))

static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static int out_ull(Out *o, unsigned long long v) {
    char tmp[24];
    char *end = tmp + sizeof tmp, *p = end;
    while (v >= 100) {
        unsigned idx = (unsigned)(v % 100) * 2;
        v /= 100;
        *--p = digit_pairs[idx + 1];
        *--p = digit_pairs[idx];
    }
    if (v >= 10) {
        *--p = digit_pairs[v * 2 + 1];
        *--p = digit_pairs[v * 2];
    } else {
        *--p = (char)('0' + v);
    }
    return out_put(o, p, end - p);
}
static int out_ll(Out *o, long long v) {
    if (v >= 0) return out_ull(o, (unsigned long long)v);
    if (!out_put(o, "-", 1)) return 0;
    return out_ull(o, 0ULL - (unsigned long long)v);
}
static PyObject *out_finish(Out *o) {
    PyObject *b = PyBytes_FromStringAndSize(o->buf ? o->buf : "", o->len);
    PyMem_RawFree(o->buf);
    return b;
}

static const char *codec_names[] = {"none", "gzip", "snappy", "lz4", "zstd"};
static const char *timestamp_name(long long magic, long long attributes) {
    if (magic == 0) return "NoTimestampType";
    return (attributes & 0x08) ? "LogAppendTime" : "CreateTime";
}

/* DumpLogSegments' batch line */
static int format_batch(Out *o, const Header *h) {
    long long size = h->length + 12;
    long long min_size = h->magic >= 2 ? 61 : 26;
    int valid = size >= min_size && h->has_computed && (uint32_t)h->computed == (uint32_t)h->crc;
    int codec = (int)(h->attributes & 7);
    int r = out_reserve(o, 512);
    if (h->magic >= 2) {
        long long last_seq = h->bseq == -1 ? -1 : increment_sequence((int32_t)h->bseq, (int32_t)h->lod);
        r = r && OUT_LIT(o, "baseOffset: ") && out_ll(o, h->base_offset) && OUT_LIT(o, " lastOffset: ") &&
            out_ll(o, wrap_add(h->base_offset, h->lod)) && OUT_LIT(o, " count: ") && out_ll(o, h->count) &&
            OUT_LIT(o, " baseSequence: ") && out_ll(o, h->bseq) && OUT_LIT(o, " lastSequence: ") &&
            out_ll(o, last_seq) && OUT_LIT(o, " producerId: ") && out_ll(o, h->pid) &&
            OUT_LIT(o, " producerEpoch: ") && out_ll(o, h->pepoch) &&
            OUT_LIT(o, " partitionLeaderEpoch: ") && out_ll(o, h->ple) &&
            ((h->attributes & 0x10) ? OUT_LIT(o, " isTransactional: true") : OUT_LIT(o, " isTransactional: false")) &&
            ((h->attributes & 0x20) ? OUT_LIT(o, " isControl: true") : OUT_LIT(o, " isControl: false")) &&
            ((h->attributes & 0x40)
                 ? (OUT_LIT(o, " deleteHorizonMs: OptionalLong[") && out_ll(o, h->base_ts) && OUT_LIT(o, "]"))
                 : OUT_LIT(o, " deleteHorizonMs: OptionalLong.empty"));
    } else {
        r = r && OUT_LIT(o, "offset: ") && out_ll(o, h->base_offset);
    }
    r = r && OUT_LIT(o, " position: ") && out_ll(o, h->position) && OUT_LIT(o, " ") &&
        out_str(o, timestamp_name(h->magic, h->attributes)) && OUT_LIT(o, ": ") && out_ll(o, h->max_ts) &&
        OUT_LIT(o, " size: ") && out_ll(o, size) && OUT_LIT(o, " magic: ") && out_ll(o, h->magic) &&
        OUT_LIT(o, " compresscodec: ") &&
        (codec <= 4 ? out_str(o, codec_names[codec])
                    : (OUT_LIT(o, "unknown(") && out_ll(o, codec) && OUT_LIT(o, ")")));
    return r && OUT_LIT(o, " crc: ") && out_ull(o, (unsigned long long)(uint32_t)h->crc) &&
           (valid ? OUT_LIT(o, " isvalid: true") : OUT_LIT(o, " isvalid: false"));
}

/* Strict UTF-8 (no overlongs, no surrogates, <= U+10FFFF): Java decodes and re-encodes such
 * bytes unchanged, so they can be copied straight to the output. */
static int valid_utf8(const uint8_t *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {  /* eight ASCII bytes at a time */
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) { i += 8; continue; }
        }
        uint8_t c = s[i];
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return 0;
            i += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (i + 2 >= n) return 0;
            uint8_t c1 = s[i + 1], c2 = s[i + 2];
            if ((c1 & 0xC0) != 0x80 || (c2 & 0xC0) != 0x80) return 0;
            if (c == 0xE0 && c1 < 0xA0) return 0;
            if (c == 0xED && c1 >= 0xA0) return 0;
            i += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (i + 3 >= n) return 0;
            uint8_t c1 = s[i + 1], c2 = s[i + 2], c3 = s[i + 3];
            if ((c1 & 0xC0) != 0x80 || (c2 & 0xC0) != 0x80 || (c3 & 0xC0) != 0x80) return 0;
            if (c == 0xF0 && c1 < 0x90) return 0;
            if (c == 0xF4 && c1 >= 0x90) return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* The fields a record line shows, from a Record tuple or straight from the bytes. */
typedef struct {
    long long offset, timestamp, sequence, crc;
    int is_valid, legacy;
    const uint8_t *key, *value;
    Py_ssize_t key_len, value_len;
    int32_t header_count;
    const uint8_t *raw_headers;   /* raw header bytes (when from bytes) ... */
    PyObject *header_tuple;       /* ... or the Record's headers tuple */
} LineRecord;

/* DumpLogSegments' record line; 1 done, 0 error, -1 refused (not valid UTF-8: nothing added) */
static int format_record(Out *o, const LineRecord *r, long long magic, long long attributes,
                         int print_data_log, int skip_metadata) {
    Py_ssize_t start = o->len;
    Py_ssize_t need = 256 + (r->key_len > 0 ? r->key_len : 0) + (r->value_len > 0 ? r->value_len : 0);
    if (!out_reserve(o, need)) return 0;
    int ok = 1;
    const char *prefix = "| ";
    if (!skip_metadata) {
        ok = OUT_LIT(o, "| offset: ") && out_ll(o, r->offset) && OUT_LIT(o, " ") &&
             out_str(o, timestamp_name(magic, attributes)) && OUT_LIT(o, ": ") && out_ll(o, r->timestamp) &&
             OUT_LIT(o, " keySize: ") && out_ll(o, r->key ? r->key_len : -1) &&
             OUT_LIT(o, " valueSize: ") && out_ll(o, r->value ? r->value_len : -1);
        if (ok && !r->legacy) {
            ok = OUT_LIT(o, " sequence: ") && out_ll(o, r->sequence) && OUT_LIT(o, " headerKeys: [");
            Py_ssize_t hpos = 0;
            for (int32_t h = 0; ok && h < r->header_count; h++) {
                const uint8_t *key;
                Py_ssize_t key_len;
                if (r->header_tuple) {
                    PyObject *k = PyTuple_GET_ITEM(PyTuple_GET_ITEM(r->header_tuple, h), 0);
                    key = (const uint8_t *)PyBytes_AS_STRING(k);
                    key_len = PyBytes_GET_SIZE(k);
                } else {
                    const uint8_t *value;
                    int32_t klen, vlen;
                    next_header(r->raw_headers, &hpos, &key, &klen, &value, &vlen);
                    key_len = klen;
                }
                if (!valid_utf8(key, key_len)) { o->len = start; return -1; }
                ok = (h == 0 || OUT_LIT(o, ",")) && out_put(o, key, key_len);
            }
            ok = ok && OUT_LIT(o, "]");
        } else if (ok) {
            ok = (r->is_valid ? OUT_LIT(o, " isValid: true crc: ") : OUT_LIT(o, " isValid: false crc: ")) &&
                 out_ull(o, (unsigned long long)r->crc) && OUT_LIT(o, "}");
        }
        prefix = " ";
    }
    if (ok && print_data_log) {
        if (r->key) {
            if (!valid_utf8(r->key, r->key_len)) { o->len = start; return -1; }
            ok = out_str(o, prefix) && OUT_LIT(o, "key: ") && out_put(o, r->key, r->key_len);
        }
        if (ok && r->value) {
            if (!valid_utf8(r->value, r->value_len)) { o->len = start; return -1; }
            ok = OUT_LIT(o, " payload: ") && out_put(o, r->value, r->value_len);
        }
    }
    return ok ? 1 : 0;
}

/* A LineRecord over a Record tuple (fields checked); 0 with an exception when malformed. */
static int line_record_of(PyObject *record, LineRecord *r, long long magic) {
    if (!PyTuple_Check(record) || PyTuple_GET_SIZE(record) != 11) {
        PyErr_SetString(PyExc_TypeError, "a Record was expected");
        return 0;
    }
    int ok = 1;
    r->offset = item_ll(record, 0, &ok);
    r->timestamp = item_ll(record, 1, &ok);
    r->legacy = magic < 2;
    r->sequence = r->legacy ? -1 : item_ll(record, 6, &ok);
    if (!ok) return 0;
    PyObject *key = PyTuple_GET_ITEM(record, 3), *value = PyTuple_GET_ITEM(record, 4);
    PyObject *headers = PyTuple_GET_ITEM(record, 5), *crc = PyTuple_GET_ITEM(record, 8);
    if ((key != Py_None && !PyBytes_Check(key)) || (value != Py_None && !PyBytes_Check(value)) ||
        !PyTuple_Check(headers)) {
        PyErr_SetString(PyExc_TypeError, "record fields of unexpected types");
        return 0;
    }
    for (Py_ssize_t h = 0; h < PyTuple_GET_SIZE(headers); h++) {
        PyObject *pair = PyTuple_GET_ITEM(headers, h);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyBytes_Check(PyTuple_GET_ITEM(pair, 0))) {
            PyErr_SetString(PyExc_TypeError, "header of unexpected type");
            return 0;
        }
    }
    r->key = key == Py_None ? NULL : (const uint8_t *)PyBytes_AS_STRING(key);
    r->key_len = key == Py_None ? -1 : PyBytes_GET_SIZE(key);
    r->value = value == Py_None ? NULL : (const uint8_t *)PyBytes_AS_STRING(value);
    r->value_len = value == Py_None ? -1 : PyBytes_GET_SIZE(value);
    r->header_count = (int32_t)PyTuple_GET_SIZE(headers);
    r->header_tuple = headers;
    r->raw_headers = NULL;
    r->crc = crc == Py_None ? 0 : PyLong_AsLongLong(crc);
    if (r->crc == -1 && PyErr_Occurred()) return 0;
    r->is_valid = PyObject_IsTrue(PyTuple_GET_ITEM(record, 9));
    return 1;
}

static void line_record_raw(const RawRecord *raw, LineRecord *r) {
    r->offset = raw->offset; r->timestamp = raw->timestamp; r->sequence = raw->sequence;
    r->crc = 0; r->is_valid = 1; r->legacy = 0;
    r->key = raw->key; r->key_len = raw->key_len; r->value = raw->value; r->value_len = raw->value_len;
    r->header_count = raw->header_count; r->raw_headers = raw->headers; r->header_tuple = NULL;
}

/* ==== entry points: framing ================================================================ */

static PyObject *native_scan(PyObject *self, PyObject *args) {
    PyTypeObject *type;
    PyObject *buffer;
    Py_ssize_t pos, end, max_count;
    int check_crc;
    if (!PyArg_ParseTuple(args, "O!Onnpn", &PyType_Type, &type, &buffer, &pos, &end, &check_crc, &max_count))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(buffer, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (end > view.len) end = view.len;
    const uint8_t *data = (const uint8_t *)view.buf;
    PyObject *list = PyList_New(0);
    for (Py_ssize_t count = 0; list && count < max_count; count++) {
        Py_ssize_t size = clean_entry_size(data, pos, end);
        if (size < 0) break;
        Header h;
        header_from_bytes(data + pos, pos, size, end - pos, check_crc, &h);
        PyObject *t = make_header(type, &h);
        if (!t || PyList_Append(list, t) < 0) { Py_XDECREF(t); Py_CLEAR(list); }
        Py_XDECREF(t);
        pos += size;
    }
    PyBuffer_Release(&view);
    return list ? Py_BuildValue("(Nn)", list, pos) : NULL;
}

/* columns(buffer, pos, end, check_crc, max_count) -> (next_pos, count, packed, last_next_offset)
 * scan() for seglog diff, without a Python object per batch: the well-framed entries from pos as
 * count x 8 native int64: position, base offset, last offset, partition leader epoch, stored CRC,
 * size field, valid (the CRC matches and the entry has the format's minimum size) and records
 * count (-1 for a legacy entry). */
static PyObject *native_columns(PyObject *self, PyObject *args) {
    PyObject *buffer;
    Py_ssize_t pos, end, max_count;
    int check_crc;
    if (!PyArg_ParseTuple(args, "Onnpn", &buffer, &pos, &end, &check_crc, &max_count)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(buffer, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (end > view.len) end = view.len;
    const uint8_t *data = (const uint8_t *)view.buf;
    PyObject *out = PyBytes_FromStringAndSize(NULL, max_count * 64);
    if (!out) { PyBuffer_Release(&view); return NULL; }
    int64_t *rows = (int64_t *)PyBytes_AS_STRING(out);
    Py_ssize_t count = 0;
    int64_t last_next = 0;
    while (count < max_count) {
        Py_ssize_t size = clean_entry_size(data, pos, end);
        if (size < 0) break;
        Header h;
        header_from_bytes(data + pos, pos, size, end - pos, check_crc, &h);
        int64_t last = h.magic >= 2 ? wrap_add(h.base_offset, h.lod) : h.base_offset;
        int64_t *r = rows + 8 * count;
        r[0] = pos; r[1] = h.base_offset; r[2] = last; r[3] = h.ple; r[4] = (int64_t)h.crc; r[5] = h.length;
        r[6] = check_crc && h.computed == h.crc && size >= (h.magic >= 2 ? 61 : 26);
        r[7] = h.has_count ? h.count : -1;
        last_next = wrap_add(last, 1);
        pos += size;
        count++;
    }
    PyBuffer_Release(&view);
    if (_PyBytes_Resize(&out, count * 64) < 0) return NULL;
    return Py_BuildValue("(nnNL)", pos, count, out, (long long)last_next);
}

static PyObject *native_walk(PyObject *self, PyObject *args) {
    PyObject *buffer;
    Py_ssize_t pos, end, max_count;
    if (!PyArg_ParseTuple(args, "Onnn", &buffer, &pos, &end, &max_count)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(buffer, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (end > view.len) end = view.len;
    const uint8_t *data = (const uint8_t *)view.buf;
    Py_ssize_t count = 0;
    int64_t last_next = 0;
    while (count < max_count) {
        Py_ssize_t size = clean_entry_size(data, pos, end);
        if (size < 0) break;
        const uint8_t *b = data + pos;
        last_next = wrap_add((int8_t)b[16] >= 2 ? wrap_add(be64(b), be32(b + 23)) : be64(b), 1);
        pos += size;
        count++;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(nnL)", pos, count, (long long)last_next);
}

/* verify_walk(buffer, pos, end, check_crc, max_count, state, segment_base, want_txn)
 *     -> (next_pos, count, state, packed, anomalies, txn_events, epochs)
 * walk() for seglog verify: the same well-framed stretch, with per-batch checks. It stops after
 * a batch whose CRC fails (Python decides whether what follows is a batch or damage).
 * packed holds count x 5 native int64: position, base offset, last offset, max timestamp and
 * flags (magic | attributes << 8 | crc ok << 24 | records count << 32). anomalies lists
 * (kind, position, offset, a, b): ("crc", stored, computed), ("magic", magic, 0),
 * ("codec", codec, magic), ("delta", last offset, base offset) for a batch ending before it
 * starts, ("order", previous last offset, base offset) for a batch whose
 * offsets do not follow the previous one, ("outlier", last offset before it, next base
 * offset) for a batch whose offsets run past the next one's, ("overflow", last offset -
 * segment base, 0), ("epoch", epoch, previous epoch) for a partition leader epoch going back
 * (or below -1), ("epoch_outlier", epoch, next epoch) for a single batch whose epoch is above
 * both neighbours' (which agree).
 * txn_events lists (position, base offset, last offset, producer id, producer epoch,
 * is_control) of transactional batches when asked; epochs lists (position, epoch, base offset)
 * where the leader epoch changes. state is OffsetOrder.state (see verify_segment.py):
 * (prev_last|None, before_last, prev_pos, prev_first, prev_epoch, before_epoch, prev_epoch_pos,
 * epoch_start_pos);
 * only batches whose headers are trusted (CRC and magic good) move it. */
static PyObject *native_verify_walk(PyObject *self, PyObject *args) {
    PyObject *buffer, *state;
    Py_ssize_t pos, end, max_count;
    int check_crc, want_txn;
    long long segment_base;
    if (!PyArg_ParseTuple(args, "OnnpnO!Lp", &buffer, &pos, &end, &check_crc, &max_count, &PyTuple_Type,
                          &state, &segment_base, &want_txn))
        return NULL;
    PyObject *prev_obj;
    long long prev_last = 0, before_last, prev_pos, prev_first, prev_epoch, before_epoch, prev_epoch_pos,
        epoch_start_pos;
    if (!PyArg_ParseTuple(state, "OLLLLLLL", &prev_obj, &before_last, &prev_pos, &prev_first, &prev_epoch,
                          &before_epoch, &prev_epoch_pos, &epoch_start_pos))
        return NULL;
    int have_prev = prev_obj != Py_None;
    if (have_prev) {
        prev_last = PyLong_AsLongLong(prev_obj);
        if (prev_last == -1 && PyErr_Occurred()) return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(buffer, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (end > view.len) end = view.len;
    const uint8_t *data = (const uint8_t *)view.buf;
    Out packed = {0};
    PyObject *anomalies = PyList_New(0), *txn = PyList_New(0), *epochs = PyList_New(0);
    Py_ssize_t count = 0;
    int ok = anomalies && txn && epochs && out_reserve(&packed, 40 * (max_count < 65536 ? max_count : 65536));
#define ANOMALY(...)                                                                  \
    do {                                                                              \
        PyObject *a_ = Py_BuildValue(__VA_ARGS__);                                    \
        ok = ok && a_ && PyList_Append(anomalies, a_) == 0;                           \
        Py_XDECREF(a_);                                                               \
    } while (0)
    while (ok && count < max_count) {
        Py_ssize_t size = clean_entry_size(data, pos, end);
        if (size < 0) break;
        Header h;
        header_from_bytes(data + pos, pos, size, end - pos, check_crc, &h);
        long long last = h.magic >= 2 ? wrap_add(h.base_offset, h.lod) : h.base_offset;
        long long first = h.base_offset;
        int crc_ok = h.has_computed && (uint32_t)h.computed == (uint32_t)h.crc;
        int codec = (int)(h.attributes & 7);
        int magic_ok = h.magic >= 0 && h.magic <= 2;
        if (check_crc && !crc_ok && magic_ok)
            ANOMALY("(snLLL)", "crc", pos, first, (long long)(uint32_t)h.crc, (long long)(uint32_t)h.computed);
        if (!magic_ok)
            ANOMALY("(snLLL)", "magic", pos, first, h.magic, 0LL);
        int trusted = magic_ok && (crc_ok || !check_crc);
        if (trusted && (h.magic >= 2 ? codec > 4 : codec > 3))  /* attributes are CRC-covered */
            ANOMALY("(snLLL)", "codec", pos, first, (long long)codec, h.magic);
        if (trusted) {
            int in_order = 1;
            if (last < first) {  /* a negative last offset delta */
                ANOMALY("(snLLL)", "delta", pos, first, last, first);
                in_order = 0;
            } else if (have_prev && first <= prev_last) {
                /* the previous batch is the odd one when this one follows the batch before it and
                 * lies below the previous one's start, or exactly where the previous one would
                 * have ended had it followed on without a gap */
                if (first > before_last &&
                    (first < prev_first ||
                     (prev_first != before_last + 1 && first == before_last + 1 + (prev_last - prev_first) + 1))) {
                    ANOMALY("(snLLL)", "outlier", prev_pos, prev_first, before_last, first);
                } else {
                    ANOMALY("(snLLL)", "order", pos, first, prev_last, first);
                    in_order = 0;
                }
            } else {
                before_last = have_prev ? prev_last : before_last;
            }
            if (in_order) {
                long long relative = (long long)((uint64_t)last - (uint64_t)segment_base);
                if (relative < 0 || relative > INT32_MAX)
                    ANOMALY("(snLLL)", "overflow", pos, last, relative, 0LL);
                prev_last = last;
                prev_first = first;
                prev_pos = pos;
                have_prev = 1;
            }
            if (h.magic >= 2 && h.ple != -1) {
                if (h.ple < -1) {
                    ANOMALY("(snLLL)", "epoch", pos, first, h.ple, prev_epoch);
                } else if (h.ple < prev_epoch) {
                    if (h.ple == before_epoch && prev_epoch_pos == epoch_start_pos) {
                        ANOMALY("(snLLL)", "epoch_outlier", prev_epoch_pos, first, prev_epoch, h.ple);
                        prev_epoch = h.ple;
                        prev_epoch_pos = pos;
                    } else {
                        ANOMALY("(snLLL)", "epoch", pos, first, h.ple, prev_epoch);
                    }
                } else {
                    if (h.ple > prev_epoch) {
                        PyObject *e = Py_BuildValue("(nLL)", pos, h.ple, first);
                        ok = ok && e && PyList_Append(epochs, e) == 0;
                        Py_XDECREF(e);
                        before_epoch = prev_epoch;
                        epoch_start_pos = pos;
                    }
                    prev_epoch = h.ple;
                    prev_epoch_pos = pos;
                }
            }
        }
        if (ok && trusted && want_txn && h.magic >= 2 && (h.attributes & 0x10)) {
            PyObject *event = Py_BuildValue("(nLLLLi)", pos, first, last, h.pid, h.pepoch,
                                            (h.attributes & 0x20) ? 1 : 0);
            ok = event && PyList_Append(txn, event) == 0;
            Py_XDECREF(event);
        }
        if (!ok) break;
        int64_t row[5] = {pos, first, last, h.max_ts,
                          (int64_t)(((uint64_t)(uint8_t)h.magic) | ((uint64_t)(uint16_t)h.attributes << 8) |
                                    ((uint64_t)(trusted ? 1 : 0) << 24) | ((uint64_t)(uint32_t)h.count << 32))};
        ok = out_put(&packed, row, sizeof row);
        pos += size;
        count++;
        if (check_crc && !trusted) break;
    }
#undef ANOMALY
    PyBuffer_Release(&view);
    if (!ok) {
        PyMem_RawFree(packed.buf);
        Py_XDECREF(anomalies);
        Py_XDECREF(txn);
        Py_XDECREF(epochs);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return NULL;
    }
    PyObject *packed_bytes = out_finish(&packed);
    if (!packed_bytes) { Py_DECREF(anomalies); Py_DECREF(txn); Py_DECREF(epochs); return NULL; }
    PyObject *prev_out = have_prev ? PyLong_FromLongLong(prev_last) : (Py_INCREF(Py_None), Py_None);
    PyObject *new_state = Py_BuildValue("(NLLLLLLL)", prev_out, before_last, prev_pos, prev_first, prev_epoch,
                                        before_epoch, prev_epoch_pos, epoch_start_pos);
    if (!new_state) { Py_DECREF(packed_bytes); Py_DECREF(anomalies); Py_DECREF(txn); Py_DECREF(epochs); return NULL; }
    return Py_BuildValue("(nnNNNNN)", pos, count, new_state, packed_bytes, anomalies, txn, epochs);
}

/* ==== entry points: records ================================================================ */

static PyObject *native_decode_v2(PyObject *self, PyObject *args) {
    PyTypeObject *type;
    Py_buffer view;
    Py_ssize_t count;
    long long base_offset, base_timestamp;
    int base_sequence, timestamp_type, stream;
    PyObject *log_append_time;
    if (!PyArg_ParseTuple(args, "O!y*nLLiOip", &PyType_Type, &type, &view, &count, &base_offset,
                          &base_timestamp, &base_sequence, &log_append_time, &timestamp_type, &stream))
        return NULL;
    BatchContext c = {base_offset, base_timestamp, 0, base_sequence, log_append_time != Py_None, stream};
    if (c.have_lat) {
        c.log_append_time = PyLong_AsLongLong(log_append_time);
        if (c.log_append_time == -1 && PyErr_Occurred()) { PyBuffer_Release(&view); return NULL; }
    }
    PyObject *result = decode_records(type, (const uint8_t *)view.buf, view.len, count, &c, timestamp_type);
    PyBuffer_Release(&view);
    return result;
}

static PyObject *native_decode_v2_batch(PyObject *self, PyObject *args) {
    PyTypeObject *type;
    PyObject *buffer, *batch;
    if (!PyArg_ParseTuple(args, "O!OO", &PyType_Type, &type, &buffer, &batch)) return NULL;
    Header h;
    if (!header_from_tuple(batch, &h)) return NULL;
    if (h.magic < 2 || (h.attributes & 7) || !h.has_count || h.count < 0 || h.length < 49) Py_RETURN_NONE;
    Py_buffer view;
    if (PyObject_GetBuffer(buffer, &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *result;
    if (h.position < 0 || h.position + 12 + h.length > view.len) {
        result = Py_None;
        Py_INCREF(result);
    } else {
        BatchContext c = context_of(&h, 0);
        result = decode_records(type, (const uint8_t *)view.buf + h.position + 61, (Py_ssize_t)(h.length - 49),
                                (Py_ssize_t)h.count, &c, c.have_lat ? 1 : 0);
    }
    PyBuffer_Release(&view);
    return result;
}

/* Whether the records section decodes cleanly; appends the offset gaps. -1 on error. */
static int check_records(const uint8_t *p, Py_ssize_t n, Py_ssize_t count, const BatchContext *c,
                         long long *last, PyObject *gaps, long long *first) {
    Py_ssize_t pos = 0;
    long long previous = *last;
    Py_ssize_t gaps_before = PyList_GET_SIZE(gaps);
    for (Py_ssize_t i = 0; i < count; i++) {
        RawRecord r;
        if (!parse_record(p, n, &pos, c, &r)) goto unclean;
        if (i == 0) *first = r.offset;  /* joins a run checked from no last offset (a decode
                                         * worker's unit) to the one before it */
        if (previous != -1 && (unsigned long long)r.offset != (unsigned long long)previous + 1ULL) {
            PyObject *pair = Py_BuildValue("(LL)", previous, (long long)r.offset);
            if (!pair || PyList_Append(gaps, pair) < 0) { Py_XDECREF(pair); return -1; }
            Py_DECREF(pair);
        }
        previous = r.offset;
    }
    if (pos != n) goto unclean;
    *last = previous;
    return 1;
unclean:
    if (PyList_SetSlice(gaps, gaps_before, PyList_GET_SIZE(gaps), NULL) < 0) return -1;
    return 0;
}

static PyObject *native_check_run(PyObject *self, PyObject *args) {
    PyTypeObject *header_type;
    PyObject *buffer, *headers, *gaps, *decompress;
    Py_ssize_t start;
    long long last;
    if (!PyArg_ParseTuple(args, "O!OO!nLO!O", &PyType_Type, &header_type, &buffer, &PyList_Type, &headers,
                          &start, &last, &PyList_Type, &gaps, &decompress))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(buffer, &view, PyBUF_SIMPLE) < 0) return NULL;
    const uint8_t *data = (const uint8_t *)view.buf;
    PyObject *sections = PyList_New(0);
    Py_ssize_t i = start, n = PyList_GET_SIZE(headers);
    long long first = 0, batch_first = 0;
    int have_first = 0;
    for (; sections && i < n; i++) {
        PyObject *batch = PyList_GET_ITEM(headers, i);
        Header h;
        if (Py_TYPE(batch) != header_type) break;
        if (!header_from_tuple(batch, &h)) { Py_CLEAR(sections); break; }
        if (h.magic < 2 || (h.attributes & 0x20) || !h.has_count || h.count < 0 || h.length < 49 ||
            h.position < 0 || h.position + 12 + h.length > view.len)
            break;
        int codec = (int)(h.attributes & 7);
        PyObject *section = Py_None;
        Py_INCREF(section);
        int clean;
        if (h.count == 0) {
            clean = 1;  /* Kafka reads nothing of an empty batch */
        } else if (codec == 0) {
            BatchContext c = context_of(&h, 0);
            clean = check_records(data + h.position + 61, (Py_ssize_t)(h.length - 49), (Py_ssize_t)h.count, &c, &last, gaps,
                                  &batch_first);
        } else {
            PyObject *raw = PyBytes_FromStringAndSize((const char *)data + h.position + 61, (Py_ssize_t)(h.length - 49));
            PyObject *plain = raw ? PyObject_CallFunction(decompress, "iOi", codec, raw, 2) : NULL;
            Py_XDECREF(raw);
            if (!plain || !PyBytes_Check(plain)) {  /* the Python path reports the failure */
                Py_XDECREF(plain);
                Py_DECREF(section);
                PyErr_Clear();
                break;
            }
            Py_DECREF(section);
            section = plain;
            BatchContext c = context_of(&h, 1);
            clean = check_records((const uint8_t *)PyBytes_AS_STRING(plain), PyBytes_GET_SIZE(plain),
                                  (Py_ssize_t)h.count, &c, &last, gaps, &batch_first);
        }
        if (clean == 1 && h.count > 0 && !have_first) {
            first = batch_first;
            have_first = 1;
        }
        if (clean != 1 || PyList_Append(sections, section) < 0) {
            Py_DECREF(section);
            if (clean < 0 || clean == 1) Py_CLEAR(sections);  /* an error, not an unclean batch */
            break;
        }
        Py_DECREF(section);
    }
    PyBuffer_Release(&view);
    if (!sections) return NULL;
    if (!have_first) return Py_BuildValue("(nLNO)", i, last, sections, Py_None);
    return Py_BuildValue("(nLNL)", i, last, sections, first);
}

/* verify_records(buffer, packed, decompress) -> (anomalies, python_positions, records)
 * seglog verify --level deep over a VerifyRun's packed rows: the records of every v2 data batch
 * are decoded (compressed sections through decompress(codec, data, 2)) and checked. Legacy,
 * control and not cleanly decodable batches go to python_positions, for the Python decoder to
 * report Kafka's exact error. anomalies: ("record_offset", position, offset, previous, 0) for
 * record offsets not increasing or outside the batch, ("last_delta", position, batch last
 * offset, last record offset, 0), ("max_ts", position, base offset, records' max, batch max). */
static int append_position(PyObject *list, int64_t position) {
    PyObject *p = PyLong_FromLongLong(position);
    int ok = p && PyList_Append(list, p) == 0;
    Py_XDECREF(p);
    return ok;
}

static int append_anomaly(PyObject *list, const char *kind, int64_t position, long long a, long long b,
                          long long c) {
    PyObject *t = Py_BuildValue("(sLLLL)", kind, (long long)position, a, b, c);
    int ok = t && PyList_Append(list, t) == 0;
    Py_XDECREF(t);
    return ok;
}

static PyObject *native_verify_records(PyObject *self, PyObject *args) {
    PyObject *buffer, *decompress;
    Py_buffer packed;
    if (!PyArg_ParseTuple(args, "Oy*O", &buffer, &packed, &decompress)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(buffer, &view, PyBUF_SIMPLE) < 0) { PyBuffer_Release(&packed); return NULL; }
    const uint8_t *data = (const uint8_t *)view.buf;
    Py_ssize_t n = packed.len / 40;
    PyObject *anomalies = PyList_New(0), *python = PyList_New(0);
    long long total = 0;
    int ok = anomalies && python;
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        int64_t row[5];
        memcpy(row, (const char *)packed.buf + 40 * i, sizeof row);
        int64_t position = row[0], base = row[1], last = row[2], max_ts = row[3];
        uint64_t flags = (uint64_t)row[4];
        int magic = (int8_t)(flags & 0xff);
        int attributes = (int)((flags >> 8) & 0xffff);
        int32_t count = (int32_t)(flags >> 32);
        if (magic == 2 && count == 0) continue;  /* Kafka reads nothing of an empty batch */
        if (!((flags >> 24) & 1)) continue;  /* CRC or magic failed: reported as such, not decoded */
        const uint8_t *b = data + position;
        Py_ssize_t length = position + 12 <= view.len ? be32(b + 8) : -1;
        if (magic != 2 || (attributes & 0x20) || count < 0 || length < 49 || position + 12 + length > view.len) {
            ok = append_position(python, position);
            continue;
        }
        int codec = attributes & 7, log_append = (attributes & 0x08) != 0;
        BatchContext c = {base, be64(b + 27), max_ts, be32(b + 53), log_append, codec != 0};
        const uint8_t *section = b + 61;
        Py_ssize_t section_len = length - 49;
        PyObject *plain = NULL;
        if (codec != 0) {
            PyObject *raw = PyBytes_FromStringAndSize((const char *)section, section_len);
            plain = raw ? PyObject_CallFunction(decompress, "iOi", codec, raw, 2) : NULL;
            Py_XDECREF(raw);
            if (!plain || !PyBytes_Check(plain)) {  /* the Python path reports why */
                Py_XDECREF(plain);
                PyErr_Clear();
                ok = append_position(python, position);
                continue;
            }
            section = (const uint8_t *)PyBytes_AS_STRING(plain);
            section_len = PyBytes_GET_SIZE(plain);
        }
        Py_ssize_t pos = 0;
        int clean = 1, misplaced = 0;
        long long previous = (long long)base - 1, records_max = LLONG_MIN, bad_offset = 0, bad_previous = 0;
        for (int32_t k = 0; k < count; k++) {
            RawRecord r;
            if (!parse_record(section, section_len, &pos, &c, &r)) { clean = 0; break; }
            if (!misplaced && ((k == 0 ? r.offset < base : r.offset <= previous) || r.offset > last)) {
                misplaced = 1;  /* reported once the whole section is known to decode */
                bad_offset = r.offset;
                bad_previous = previous;
            }
            previous = r.offset;
            if (k == 0 || r.timestamp > records_max) records_max = r.timestamp;
        }
        if (clean && pos != section_len) clean = 0;
        Py_XDECREF(plain);
        if (!clean) {
            ok = append_position(python, position);
            continue;
        }
        total += count;
        if (misplaced) ok = append_anomaly(anomalies, "record_offset", position, bad_offset, bad_previous, 0);
        if (ok && previous != last) ok = append_anomaly(anomalies, "last_delta", position, last, previous, 0);
        if (ok && !log_append && records_max != max_ts)
            ok = append_anomaly(anomalies, "max_ts", position, base, records_max, max_ts);
    }
    PyBuffer_Release(&view);
    PyBuffer_Release(&packed);
    if (!ok) {
        Py_XDECREF(anomalies);
        Py_XDECREF(python);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return NULL;
    }
    return Py_BuildValue("(NNL)", anomalies, python, total);
}

/* ==== entry points: text =================================================================== */

static PyObject *native_batch_line(PyObject *self, PyObject *batch) {
    Header h;
    if (!header_from_tuple(batch, &h)) return NULL;
    if (h.magic >= 2 && !h.has_count) { PyErr_SetString(PyExc_TypeError, "v2 batch without a count"); return NULL; }
    Out o = {0};
    if (!format_batch(&o, &h)) { PyMem_RawFree(o.buf); return NULL; }
    return out_finish(&o);
}

static PyObject *native_batch_lines(PyObject *self, PyObject *args) {
    PyObject *buffer;
    Py_ssize_t pos, end;
    int check_crc;
    if (!PyArg_ParseTuple(args, "Onnp", &buffer, &pos, &end, &check_crc)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(buffer, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (end > view.len) end = view.len;
    const uint8_t *data = (const uint8_t *)view.buf;
    Out o = {0};
    int ok = 1;
    for (int first = 1; ok; first = 0) {
        Py_ssize_t size = clean_entry_size(data, pos, end);
        if (size < 0) break;
        Header h;
        header_from_bytes(data + pos, pos, size, end - pos, check_crc, &h);
        ok = (first || OUT_LIT(&o, "\n")) && format_batch(&o, &h);
        pos += size;
    }
    PyBuffer_Release(&view);
    if (!ok) { PyMem_RawFree(o.buf); return NULL; }
    return out_finish(&o);
}

static PyObject *native_record_line(PyObject *self, PyObject *args) {
    PyObject *record, *batch;
    int print_data_log, skip_metadata;
    if (!PyArg_ParseTuple(args, "OOpp", &record, &batch, &print_data_log, &skip_metadata)) return NULL;
    Header h;
    LineRecord r;
    if (!header_from_tuple(batch, &h) || !line_record_of(record, &r, h.magic)) return NULL;
    Out o = {0};
    int done = format_record(&o, &r, h.magic, h.attributes, print_data_log, skip_metadata);
    if (done == 1) return out_finish(&o);
    PyMem_RawFree(o.buf);
    if (done == 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *native_render_lines(PyObject *self, PyObject *args) {
    PyTypeObject *header_type, *record_type;
    PyObject *items, *batch;
    Py_ssize_t start;
    int print_data_log, skip_metadata;
    if (!PyArg_ParseTuple(args, "O!O!O!nOpp", &PyType_Type, &header_type, &PyType_Type, &record_type,
                          &PyList_Type, &items, &start, &batch, &print_data_log, &skip_metadata))
        return NULL;
    Header h = {0};
    if (batch != Py_None && !header_from_tuple(batch, &h)) return NULL;
    Py_ssize_t i = start, n = PyList_GET_SIZE(items);
    Out o = {0};
    for (; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        Py_ssize_t mark = o.len;
        if (mark && !OUT_LIT(&o, "\n")) goto error;
        if (Py_TYPE(item) == header_type) {
            Header next;
            if (!header_from_tuple(item, &next)) goto error;
            if (next.magic >= 2 && !next.has_count) { o.len = mark; break; }
            if (!format_batch(&o, &next)) goto error;
            h = next;
            batch = item;
        } else if (Py_TYPE(item) == record_type && batch != Py_None) {
            LineRecord r;
            if (!line_record_of(item, &r, h.magic)) goto error;
            int done = format_record(&o, &r, h.magic, h.attributes, print_data_log, skip_metadata);
            if (done == 0) goto error;
            if (done < 0) { o.len = mark; break; }
        } else {
            o.len = mark;
            break;
        }
    }
    PyObject *text = out_finish(&o);
    return text ? Py_BuildValue("(NnO)", text, i, batch) : NULL;
error:
    PyMem_RawFree(o.buf);
    return NULL;
}

/* One batch of deep_lines: its header and where its records section lies. */
typedef struct { Header h; const uint8_t *p; Py_ssize_t len; int compressed; } DeepBatch;

/* deep_lines(buffer, headers, sections, start, print_data_log, skip_metadata) -> (text, done)
 * The headers are read with the GIL held, then every line is formatted with it released (the
 * sections are kept alive by the caller's list): dump's decode threads format in parallel. */
static PyObject *native_deep_lines(PyObject *self, PyObject *args) {
    PyObject *buffer, *headers, *sections;
    Py_ssize_t start;
    int print_data_log, skip_metadata;
    if (!PyArg_ParseTuple(args, "OO!O!npp", &buffer, &PyList_Type, &headers, &PyList_Type, &sections,
                          &start, &print_data_log, &skip_metadata))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(headers);
    if (PyList_GET_SIZE(sections) != n) {
        PyErr_SetString(PyExc_ValueError, "one section per header");
        return NULL;
    }
    if (start < 0) start = 0;
    Py_buffer view;
    if (PyObject_GetBuffer(buffer, &view, PyBUF_SIMPLE) < 0) return NULL;
    DeepBatch *batches = n > start ? PyMem_RawMalloc((size_t)(n - start) * sizeof(DeepBatch)) : NULL;
    if (n > start && !batches) { PyBuffer_Release(&view); return PyErr_NoMemory(); }
    Py_ssize_t ready = 0;
    for (Py_ssize_t i = start; i < n; i++) {  /* the batches the loop below may format */
        DeepBatch *d = &batches[ready];
        if (!header_from_tuple(PyList_GET_ITEM(headers, i), &d->h)) {
            PyMem_RawFree(batches);
            PyBuffer_Release(&view);
            return NULL;
        }
        PyObject *section = PyList_GET_ITEM(sections, i);
        if (section == Py_None) {
            if (d->h.position < 0 || d->h.length < 49 || d->h.position + 12 + d->h.length > view.len) break;
            d->p = (const uint8_t *)view.buf + d->h.position + 61;
            d->len = (Py_ssize_t)(d->h.length - 49);
            d->compressed = 0;
        } else if (PyBytes_Check(section)) {
            d->p = (const uint8_t *)PyBytes_AS_STRING(section);
            d->len = PyBytes_GET_SIZE(section);
            d->compressed = 1;
        } else {
            break;
        }
        ready++;
    }
    Out o = {0};
    o.nogil = 1;
    int failed = 0;
    Py_ssize_t k = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; k < ready && !failed; k++) {
        const DeepBatch *d = &batches[k];
        Py_ssize_t mark = o.len;
        if ((mark && !OUT_LIT(&o, "\n")) || !format_batch(&o, &d->h)) { failed = 1; break; }
        BatchContext c = context_of(&d->h, d->compressed);
        Py_ssize_t pos = 0;
        int refused = 0;
        for (long long r = 0; r < d->h.count; r++) {
            RawRecord raw;
            LineRecord line;
            if (!parse_record(d->p, d->len, &pos, &c, &raw)) { refused = 1; break; }
            line_record_raw(&raw, &line);
            if (!OUT_LIT(&o, "\n")) { failed = 1; break; }
            int done = format_record(&o, &line, d->h.magic, d->h.attributes, print_data_log, skip_metadata);
            if (done == 0) { failed = 1; break; }
            if (done < 0) { refused = 1; break; }
        }
        if (failed) break;
        if (refused) { o.len = mark; break; }
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(batches);
    PyBuffer_Release(&view);
    if (failed) {
        PyMem_RawFree(o.buf);
        return PyErr_NoMemory();
    }
    PyObject *text = out_finish(&o);
    return text ? Py_BuildValue("(Nn)", text, start + k) : NULL;
}

static PyObject *native_crc32c(PyObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    uint32_t crc = crc32c((const uint8_t *)view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

/* ==== entry points: index checks ========================================================== */

/* index_odd(packed, entry_positions, entry_relatives, start, stop, base) -> [entry numbers]
 * Merges the offset index entries [start, stop) (int32 arrays, positions ascending) with a
 * verify run's packed rows (position ascending): an entry is fine when a row starts at its
 * position and ends at base + its relative offset; the others are returned for the Python
 * checks (which know the rules for the rest). */
static PyObject *native_index_odd(PyObject *self, PyObject *args) {
    Py_buffer packed, positions, relatives;
    Py_ssize_t start, stop;
    long long base;
    if (!PyArg_ParseTuple(args, "y*y*y*nnL", &packed, &positions, &relatives, &start, &stop, &base)) return NULL;
    PyObject *odd = PyList_New(0);
    const int64_t *rows = (const int64_t *)packed.buf;
    Py_ssize_t n = packed.len / 40, row = 0;
    const int32_t *pos = (const int32_t *)positions.buf, *rel = (const int32_t *)relatives.buf;
    Py_ssize_t entries = positions.len / 4 < relatives.len / 4 ? positions.len / 4 : relatives.len / 4;
    if (stop > entries) stop = entries;
    for (Py_ssize_t i = start; odd && i < stop; i++) {
        while (row < n && rows[5 * row] < pos[i]) row++;
        if (row < n && rows[5 * row] == pos[i] && rows[5 * row + 2] == base + rel[i]) continue;
        PyObject *number = PyLong_FromSsize_t(i);
        if (!number || PyList_Append(odd, number) < 0) Py_CLEAR(odd);
        Py_XDECREF(number);
    }
    PyBuffer_Release(&packed);
    PyBuffer_Release(&positions);
    PyBuffer_Release(&relatives);
    return odd;
}

/* time_index_odd(packed, entry_timestamps, entry_relatives, start, stop, base) -> [entry numbers]
 * The same for time index entries (int64 timestamps, int32 relative offsets, offsets
 * ascending) against rows whose last offsets ascend: fine when a row ends at the entry's
 * offset with the entry's timestamp as its max timestamp. */
static PyObject *native_time_index_odd(PyObject *self, PyObject *args) {
    Py_buffer packed, timestamps, relatives;
    Py_ssize_t start, stop;
    long long base;
    if (!PyArg_ParseTuple(args, "y*y*y*nnL", &packed, &timestamps, &relatives, &start, &stop, &base)) return NULL;
    PyObject *odd = PyList_New(0);
    const int64_t *rows = (const int64_t *)packed.buf, *ts = (const int64_t *)timestamps.buf;
    const int32_t *rel = (const int32_t *)relatives.buf;
    Py_ssize_t n = packed.len / 40, row = 0;
    Py_ssize_t entries = timestamps.len / 8 < relatives.len / 4 ? timestamps.len / 8 : relatives.len / 4;
    if (stop > entries) stop = entries;
    for (Py_ssize_t i = start; odd && i < stop; i++) {
        long long offset = base + rel[i];
        while (row < n && rows[5 * row + 2] < offset) row++;
        if (row < n && rows[5 * row + 2] == offset && rows[5 * row + 3] == ts[i]) continue;
        PyObject *number = PyLong_FromSsize_t(i);
        if (!number || PyList_Append(odd, number) < 0) Py_CLEAR(odd);
        Py_XDECREF(number);
    }
    PyBuffer_Release(&packed);
    PyBuffer_Release(&timestamps);
    PyBuffer_Release(&relatives);
    return odd;
}

/* first_disorder(values, itemsize, strictly) -> index of the first value not above (strictly)
 * or below (not strictly: not at least) the one before it, or -1. values: native ints. */
static PyObject *native_first_disorder(PyObject *self, PyObject *args) {
    Py_buffer values;
    int itemsize, strictly;
    if (!PyArg_ParseTuple(args, "y*ip", &values, &itemsize, &strictly)) return NULL;
    Py_ssize_t n = values.len / itemsize, found = -1;
    for (Py_ssize_t i = 1; i < n && found < 0; i++) {
        long long a, b;
        if (itemsize == 8) { a = ((const int64_t *)values.buf)[i - 1]; b = ((const int64_t *)values.buf)[i]; }
        else { a = ((const int32_t *)values.buf)[i - 1]; b = ((const int32_t *)values.buf)[i]; }
        if (strictly ? b <= a : b < a) found = i;
    }
    PyBuffer_Release(&values);
    return PyLong_FromSsize_t(found);
}


/* ==== entry points: recovery ================================================================ */

/* A small open-addressing map producer id -> the producer's current run (recover_walk). */
typedef struct { int64_t pid; int32_t epoch; int32_t flags; Py_ssize_t last_slot; int used; } RunSlot;
typedef struct { RunSlot *slots; Py_ssize_t cap, size; } RunMap;

static RunSlot *run_find(RunMap *m, int64_t pid) {
    if (m->size * 2 >= m->cap) {
        Py_ssize_t cap = m->cap ? m->cap * 2 : 64;
        RunSlot *slots = PyMem_Calloc((size_t)cap, sizeof(RunSlot));
        if (!slots) { PyErr_NoMemory(); return NULL; }
        for (Py_ssize_t i = 0; i < m->cap; i++) {
            if (!m->slots[i].used) continue;
            uint64_t h = (uint64_t)m->slots[i].pid * 0x9E3779B97F4A7C15ull;
            Py_ssize_t j = (Py_ssize_t)(h >> 7) & (cap - 1);
            while (slots[j].used) j = (j + 1) & (cap - 1);
            slots[j] = m->slots[i];
        }
        PyMem_Free(m->slots);
        m->slots = slots;
        m->cap = cap;
    }
    uint64_t h = (uint64_t)pid * 0x9E3779B97F4A7C15ull;
    Py_ssize_t j = (Py_ssize_t)(h >> 7) & (m->cap - 1);
    while (m->slots[j].used && m->slots[j].pid != pid) j = (j + 1) & (m->cap - 1);
    if (!m->slots[j].used) {
        m->slots[j].used = 1;
        m->slots[j].pid = pid;
        m->slots[j].flags = -1;  /* no run yet */
        m->slots[j].last_slot = -1;
        m->size++;
    }
    return &m->slots[j];
}

/* recover_walk(buffer, pos, end, base_offset, interval, max_offset_entries, max_time_entries, state)
 *     -> (next_pos, count, state, offset_entries, time_entries, txn_batches, producer_positions)
 * LogSegment.recover's loop (SegmentIndexer.recover) over the clean v2 batches from pos: CRC-32C
 * checked, offset and time index entries built under the index.interval.bytes rule. It stops
 * before the first entry that is not a well-framed magic-2 batch with a good CRC, whose last offset
 * does not fit the segment, or whose index entries would make the index code raise (full, or out of
 * order): Python's loop carries on from there and decides. state is
 * (max_ts, offset_of_max, since, next_offset, last_index_offset (-1: none), last_time_ts,
 *  last_time_offset, have_time, offset_entries, time_entries).
 * producer_positions lists, in log order, the batches the producer-state replay needs: every
 * control batch with a producer id, and of each run of a producer's data batches with the same
 * epoch and transactional flag (not broken by its own control batch) the first and the last
 * (the last one moved up into the run's second place: another producer's state never depends on
 * it), and the last batch of the walk once more at the end (it sets the map end offset). */
static PyObject *native_recover_walk(PyObject *self, PyObject *args) {
    PyObject *buffer, *state;
    Py_ssize_t pos, end;
    long long base, interval, max_offset_entries, max_time_entries;
    if (!PyArg_ParseTuple(args, "OnnLLLLO!", &buffer, &pos, &end, &base, &interval, &max_offset_entries,
                          &max_time_entries, &PyTuple_Type, &state))
        return NULL;
    long long max_ts, offset_of_max, since, next_offset, last_index_offset, last_time_ts, last_time_offset,
        offset_entries, time_entries;
    int have_time;
    if (!PyArg_ParseTuple(state, "LLLLLLLpLL", &max_ts, &offset_of_max, &since, &next_offset, &last_index_offset,
                          &last_time_ts, &last_time_offset, &have_time, &offset_entries, &time_entries))
        return NULL;
    int have_index = last_index_offset >= 0;
    Py_buffer view;
    if (PyObject_GetBuffer(buffer, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (end > view.len) end = view.len;
    const uint8_t *data = (const uint8_t *)view.buf;
    Out offsets = {0}, times = {0};
    RunMap runs = {0};
    PyObject *positions = PyList_New(0);
    Py_ssize_t count = 0, last_pos = -1;
    long long txn_batches = 0;
    int ok = positions != NULL;
    while (ok) {
        Py_ssize_t size = clean_entry_size(data, pos, end);
        if (size < 0) break;
        const uint8_t *b = data + pos;
        if ((int8_t)b[16] != 2 || size < 61) break;
        if ((uint32_t)be32(b + 17) != crc32c(b + 21, (size_t)(size - 21))) break;
        long long first = be64(b), last = wrap_add(first, be32(b + 23)), batch_max_ts = be64(b + 35);
        long long relative = (long long)((uint64_t)last - (uint64_t)base);
        if (relative < 0 || relative > INT32_MAX) break;
        long long new_max_ts = max_ts, new_offset_of_max = offset_of_max;
        if (batch_max_ts > new_max_ts) { new_max_ts = batch_max_ts; new_offset_of_max = last; }
        if (since > interval) {
            /* SegmentIndexer._append_offset_entry and maybe_append_time would raise: Python decides */
            if (offset_entries >= max_offset_entries || (have_index && last <= last_index_offset)) break;
            if (time_entries >= max_time_entries - 1) break;
            if (have_time && (new_offset_of_max < last_time_offset || new_max_ts < last_time_ts)) break;
            uint8_t entry[12];
            uint32_t rel = (uint32_t)relative, p32 = (uint32_t)pos;
            entry[0] = rel >> 24; entry[1] = rel >> 16; entry[2] = rel >> 8; entry[3] = rel;
            entry[4] = p32 >> 24; entry[5] = p32 >> 16; entry[6] = p32 >> 8; entry[7] = p32;
            ok = out_put(&offsets, entry, 8);
            offset_entries++;
            last_index_offset = last;
            have_index = 1;
            if (ok && new_max_ts > last_time_ts) {
                uint64_t ts = (uint64_t)new_max_ts;
                uint32_t trel = (uint32_t)(new_offset_of_max - base);
                for (int i = 0; i < 8; i++) entry[i] = (uint8_t)(ts >> (56 - 8 * i));
                entry[8] = trel >> 24; entry[9] = trel >> 16; entry[10] = trel >> 8; entry[11] = trel;
                ok = out_put(&times, entry, 12);
                time_entries++;
                last_time_ts = new_max_ts;
                last_time_offset = new_offset_of_max;
                have_time = 1;
            }
            since = 0;
        }
        max_ts = new_max_ts;
        offset_of_max = new_offset_of_max;
        since += size;
        next_offset = last + 1;
        int16_t attributes = be16(b + 21);
        int transactional = (attributes & 0x10) != 0, control = (attributes & 0x20) != 0;
        if (transactional) txn_batches++;
        int64_t pid = be64(b + 43);
        if (ok && pid >= 0) {
            RunSlot *run = run_find(&runs, pid);
            ok = run != NULL;
            int32_t epoch = be16(b + 51);
            if (ok && control) {
                ok = append_position(positions, pos);
                run->flags = -1;  /* the producer's next data batch starts a new run */
            } else if (ok && run->flags == transactional && run->epoch == epoch) {
                if (run->last_slot < 0) {
                    run->last_slot = PyList_GET_SIZE(positions);
                    ok = append_position(positions, pos);
                } else {
                    PyObject *p = PyLong_FromSsize_t(pos);
                    ok = p != NULL && PyList_SetItem(positions, run->last_slot, p) == 0;
                }
            } else if (ok) {
                run->flags = transactional;
                run->epoch = epoch;
                run->last_slot = -1;
                ok = append_position(positions, pos);
            }
        }
        last_pos = pos;
        pos += size;
        count++;
    }
    PyBuffer_Release(&view);
    PyMem_Free(runs.slots);
    if (ok && last_pos >= 0) {  /* the walk's last batch ends the list (it sets the map end offset) */
        Py_ssize_t n = PyList_GET_SIZE(positions);
        if (n == 0 || PyLong_AsSsize_t(PyList_GET_ITEM(positions, n - 1)) != last_pos)
            ok = append_position(positions, last_pos);
    }
    if (!ok) {
        PyMem_RawFree(offsets.buf);
        PyMem_RawFree(times.buf);
        Py_XDECREF(positions);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return NULL;
    }
    PyObject *offsets_bytes = out_finish(&offsets);
    PyObject *times_bytes = out_finish(&times);
    if (!offsets_bytes || !times_bytes) {
        Py_XDECREF(offsets_bytes);
        Py_XDECREF(times_bytes);
        Py_DECREF(positions);
        return NULL;
    }
    return Py_BuildValue("(nn(LLLLLLLiLL)NNLN)", pos, count, max_ts, offset_of_max, since, next_offset,
                         have_index ? last_index_offset : -1LL, last_time_ts, last_time_offset, have_time,
                         offset_entries, time_entries, offsets_bytes, times_bytes, txn_batches, positions);
}


/* ==== entry points: columns (the Spark reader) ============================================== */

enum { COL_OFFSET, COL_TIMESTAMP, COL_KEY_END, COL_KEY_DATA, COL_KEY_VALID, COL_VALUE_END, COL_VALUE_DATA,
       COL_VALUE_VALID, COL_HEADERS_END, COL_HKEY_END, COL_HKEY_DATA, COL_HVALUE_END, COL_HVALUE_DATA,
       COL_HVALUE_VALID, COL_COUNT };

static int col_put(PyObject *array, const void *data, Py_ssize_t n) {
    Py_ssize_t at = PyByteArray_GET_SIZE(array);
    if (PyByteArray_Resize(array, at + n) < 0) return 0;
    if (n) memcpy(PyByteArray_AS_STRING(array) + at, data, (size_t)n);
    return 1;
}

static int col_end(PyObject *data, PyObject *ends) {  /* the data column's length as an int32 end */
    int32_t end = (int32_t)PyByteArray_GET_SIZE(data);
    return col_put(ends, &end, 4);
}

/* Appends a records section's records (decode_v2()'s, from the decompressed or mapped bytes) to
 * the first 14 columns as Arrow-ready buffers: native-endian int64 offsets and timestamps; int32
 * end positions of keys, values, each record's headers and the header keys and values; their
 * bytes; one validity byte per key, value and header value. 1 when done; 0, with every column
 * back at its old length, when the section is not clean or a header key is not UTF-8 (the
 * Python path then decodes it the way Java does); -1 on a Python error. */
static int append_records(const uint8_t *p, Py_ssize_t n, Py_ssize_t count, const BatchContext *c,
                          PyObject **col) {
    Py_ssize_t before[COL_COUNT];
    for (int i = 0; i < COL_COUNT; i++) before[i] = PyByteArray_GET_SIZE(col[i]);
    static const uint8_t one = 1, zero = 0;
    Py_ssize_t pos = 0;
    int ok = 1, clean = 1;
    for (Py_ssize_t i = 0; i < count && ok && clean; i++) {
        RawRecord r;
        if (!parse_record(p, n, &pos, c, &r)) { clean = 0; break; }
        int64_t offset = r.offset, timestamp = r.timestamp;
        ok = col_put(col[COL_OFFSET], &offset, 8) && col_put(col[COL_TIMESTAMP], &timestamp, 8)
             && col_put(col[COL_KEY_DATA], r.key, r.key ? r.key_len : 0) && col_end(col[COL_KEY_DATA], col[COL_KEY_END])
             && col_put(col[COL_KEY_VALID], r.key ? &one : &zero, 1)
             && col_put(col[COL_VALUE_DATA], r.value, r.value ? r.value_len : 0)
             && col_end(col[COL_VALUE_DATA], col[COL_VALUE_END])
             && col_put(col[COL_VALUE_VALID], r.value ? &one : &zero, 1);
        Py_ssize_t hpos = 0;
        for (int32_t h = 0; h < r.header_count && ok && clean; h++) {
            const uint8_t *key, *value;
            int32_t key_len, value_len;
            next_header(r.headers, &hpos, &key, &key_len, &value, &value_len);
            if (!(clean = valid_utf8(key, key_len))) break;
            ok = col_put(col[COL_HKEY_DATA], key, key_len) && col_end(col[COL_HKEY_DATA], col[COL_HKEY_END])
                 && col_put(col[COL_HVALUE_DATA], value, value ? value_len : 0)
                 && col_end(col[COL_HVALUE_DATA], col[COL_HVALUE_END])
                 && col_put(col[COL_HVALUE_VALID], value ? &one : &zero, 1);
        }
        if (ok && clean) {
            int32_t headers_end = (int32_t)(PyByteArray_GET_SIZE(col[COL_HKEY_END]) / 4);
            ok = col_put(col[COL_HEADERS_END], &headers_end, 4);
        }
    }
    if (ok && clean && pos == n) return 1;
    for (int i = 0; i < COL_COUNT; i++)  /* shrinking never fails */
        if (PyByteArray_GET_SIZE(col[i]) != before[i]) PyByteArray_Resize(col[i], before[i]);
    return ok ? 0 : -1;  /* not ok: a bytearray could not grow (MemoryError is set) */
}

/* count copies of the same n-byte value appended to a column */
static int col_fill(PyObject *array, const void *value, Py_ssize_t n, Py_ssize_t count) {
    Py_ssize_t at = PyByteArray_GET_SIZE(array);
    if (PyByteArray_Resize(array, at + n * count) < 0) return 0;
    char *out = PyByteArray_AS_STRING(array) + at;
    for (Py_ssize_t i = 0; i < count; i++, out += n) memcpy(out, value, (size_t)n);
    return 1;
}

enum { RUN_CHUNK, RUN_FULL, RUN_GENERAL, RUN_END };  /* why columns_run returned */
enum { COL_BASE_OFFSET = COL_COUNT, COL_PRODUCER_ID, COL_PRODUCER_EPOCH, COL_POSITION, COL_ATTRIBUTES,
       COL_CRC_VALID, COL_MAGIC, COL_ALL };

/* columns_run(buffer, chunk, index, split_end, skip_invalid, max_rows, payload, max_payload, columns,
 *             decompress, expected) -> (next_index, reason, payload)
 * The Spark reader's loop over a chunk of BatchHeaders (LogScan.chunks()) from index: each v2
 * data batch (uncompressed, or decompressed by calling decompress(codec, section, 2)) has its
 * records appended to the first 14 of the 21 bytearrays in columns (see append_records) and,
 * per record, its batch's base offset (int64), producer id (int64), producer epoch (int32),
 * position (int64), attributes' low byte, CRC verdict (1 when the CRC matched or was not
 * computed) and magic (a byte each). payload adds up the batches' length fields. It returns at the first
 * batch starting at or past split_end (RUN_END), at one the Python path must read (RUN_GENERAL:
 * legacy, control, empty, failing its CRC when skip_invalid, decompression raising one of the
 * exception classes in expected, records not clean), after the batch that brings the records
 * to max_rows or payload to max_payload, or before one whose records would take the buffers past
 * max_rows (RUN_FULL: only a batch read alone can exceed it), or at the chunk's end (RUN_CHUNK). */
static PyObject *native_columns_run(PyObject *self, PyObject *args) {
    Py_buffer view;
    PyObject *chunk, *columns, *decompress, *expected;
    Py_ssize_t index, max_rows;
    long long split_end, payload, max_payload;
    int skip_invalid;
    if (!PyArg_ParseTuple(args, "y*O!nLpnLLO!OO", &view, &PyList_Type, &chunk, &index, &split_end, &skip_invalid,
                          &max_rows, &payload, &max_payload, &PyList_Type, &columns, &decompress, &expected))
        return NULL;
    PyObject *col[COL_ALL];
    int reason = RUN_CHUNK, failed = 0;
    if (PyList_GET_SIZE(columns) != COL_ALL) {
        PyErr_SetString(PyExc_ValueError, "columns_run needs 21 bytearrays");
        failed = 1;
    }
    for (int i = 0; i < COL_ALL && !failed; i++) {
        col[i] = PyList_GET_ITEM(columns, i);
        if (!PyByteArray_Check(col[i])) {
            PyErr_SetString(PyExc_TypeError, "columns_run needs bytearrays");
            failed = 1;
        }
    }
    const uint8_t *base = (const uint8_t *)view.buf;
    Py_ssize_t size = PyList_GET_SIZE(chunk);
    for (; index < size && !failed; index++) {
        Header h;
        if (!header_from_tuple(PyList_GET_ITEM(chunk, index), &h)) { failed = 1; break; }
        if (h.position >= split_end) { reason = RUN_END; break; }
        Py_ssize_t start = (Py_ssize_t)h.position + 61, end = (Py_ssize_t)h.position + 12 + (Py_ssize_t)h.length;
        int crc_valid = !h.has_computed || (h.crc == h.computed && h.length >= 49);
        if (h.magic < 2 || (h.attributes & 0x20) || !h.has_count || h.count <= 0 || h.position < 0
            || start > end || end > view.len || (!crc_valid && skip_invalid)) {
            reason = RUN_GENERAL;
            break;
        }
        Py_ssize_t rows = PyByteArray_GET_SIZE(col[COL_OFFSET]) / 8;
        if (rows && rows + (Py_ssize_t)h.count > max_rows) { reason = RUN_FULL; break; }  /* no overshoot */
        int codec = (int)(h.attributes & 7);
        BatchContext c = {h.base_offset, h.base_ts, (h.attributes & 0x08) ? h.max_ts : 0, -1,
                          (h.attributes & 0x08) != 0, codec != 0};
        PyObject *section = NULL;
        Py_buffer data = {0};
        const uint8_t *p = base + start;
        Py_ssize_t n = end - start;
        if (codec) {
            PyObject *raw = PyMemoryView_FromMemory((char *)(base + start), end - start, PyBUF_READ);
            section = raw ? PyObject_CallFunction(decompress, "iOi", codec, raw, 2) : NULL;
            Py_XDECREF(raw);
            if (!section) {
                if (PyErr_ExceptionMatches(expected)) { PyErr_Clear(); reason = RUN_GENERAL; }
                else failed = 1;
                break;
            }
            if (PyObject_GetBuffer(section, &data, PyBUF_SIMPLE) < 0) { Py_DECREF(section); failed = 1; break; }
            p = (const uint8_t *)data.buf;
            n = data.len;
        }
        int appended = append_records(p, n, (Py_ssize_t)h.count, &c, col);
        if (section) { PyBuffer_Release(&data); Py_DECREF(section); }
        if (appended < 0) { failed = 1; break; }
        if (!appended) { reason = RUN_GENERAL; break; }
        int64_t base_offset = h.base_offset, pid = h.pid, position = h.position;
        int32_t epoch = (int32_t)h.pepoch;
        uint8_t attributes = (uint8_t)h.attributes, verdict = (uint8_t)crc_valid, magic = 2;
        Py_ssize_t count = (Py_ssize_t)h.count;
        if (!(col_fill(col[COL_BASE_OFFSET], &base_offset, 8, count) && col_fill(col[COL_PRODUCER_ID], &pid, 8, count)
              && col_fill(col[COL_PRODUCER_EPOCH], &epoch, 4, count)
              && col_fill(col[COL_POSITION], &position, 8, count)
              && col_fill(col[COL_ATTRIBUTES], &attributes, 1, count)
              && col_fill(col[COL_CRC_VALID], &verdict, 1, count)
              && col_fill(col[COL_MAGIC], &magic, 1, count))) { failed = 1; break; }
        payload += h.length;
        if (PyByteArray_GET_SIZE(col[COL_OFFSET]) / 8 >= max_rows || payload >= max_payload) {
            index++;
            reason = RUN_FULL;
            break;
        }
    }
    PyBuffer_Release(&view);
    if (failed) return NULL;
    return Py_BuildValue("niL", index, reason, payload);
}

static PyMethodDef methods[] = {
    {"scan", native_scan, METH_VARARGS, "Headers of the well-framed entries from pos."},
    {"walk", native_walk, METH_VARARGS, "Skip over well-framed entries: (next_pos, count, last_next_offset)."},
    {"columns", native_columns, METH_VARARGS, "Header columns of the well-framed entries from pos (seglog diff)."},
    {"verify_walk", native_verify_walk, METH_VARARGS, "walk() with seglog verify's per-batch checks."},
    {"verify_records", native_verify_records, METH_VARARGS, "Deep checks of a VerifyRun's v2 data batches."},
    {"decode_v2", native_decode_v2, METH_VARARGS, "Records of a clean v2 records section, else None."},
    {"decode_v2_batch", native_decode_v2_batch, METH_VARARGS, "Records of an uncompressed v2 batch, else None."},
    {"check_run", native_check_run, METH_VARARGS, "Confirm a stretch of cleanly decodable data batches."},
    {"batch_line", native_batch_line, METH_O, "DumpLogSegments' batch line."},
    {"batch_lines", native_batch_lines, METH_VARARGS, "Batch lines of the well-framed entries in a region."},
    {"record_line", native_record_line, METH_VARARGS, "DumpLogSegments' record line, or None."},
    {"render_lines", native_render_lines, METH_VARARGS, "Lines of a list of batches and records."},
    {"deep_lines", native_deep_lines, METH_VARARGS, "Batch and record lines straight from the bytes."},
    {"index_odd", native_index_odd, METH_VARARGS, "Offset index entries a run does not confirm."},
    {"time_index_odd", native_time_index_odd, METH_VARARGS, "Time index entries a run does not confirm."},
    {"first_disorder", native_first_disorder, METH_VARARGS, "First element out of order, or -1."},
    {"crc32c", native_crc32c, METH_VARARGS, "CRC-32C of a bytes-like object."},
    {"recover_walk", native_recover_walk, METH_VARARGS, "LogSegment.recover's loop over clean v2 batches."},
    {"columns_run", native_columns_run, METH_VARARGS, "The Spark reader's column buffers for a chunk of batches."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native(void) {
    make_tables(crc32c_table, 0x82F63B78u);
    make_tables(crc32_table, 0xEDB88320u);
#ifdef HAVE_SSE42_CRC
    __builtin_cpu_init();
    use_hw_crc32c = __builtin_cpu_supports("sse4.2");
    make_zeros_tables(crc32c_long, CRC_LONG);
    make_zeros_tables(crc32c_short, CRC_SHORT);
#endif
    return PyModule_Create(&module);
}
