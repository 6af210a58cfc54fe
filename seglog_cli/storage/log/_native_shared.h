/* The private declarations shared by the C files of seglog_cli.storage.log._native (see
 * _native.c): byte and varint primitives, the header and record structures, the growing byte
 * buffer, and the functions and entry points one file defines for the others. Internal to the extension: every
 * name declared here is hidden from the shared object's exported symbols. */

#ifndef SEGLOG_NATIVE_SHARED_H
#define SEGLOG_NATIVE_SHARED_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <limits.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define HAVE_SSE42_CRC 1
#endif

#pragma GCC visibility push(hidden)

/* ==== checksums (_native_crc.c) ============================================================= */

void crc_init(void);
uint32_t crc32c(const uint8_t *p, size_t n);
uint32_t crc32_ieee(const uint8_t *p, size_t n);

/* ==== primitives ============================================================================ */

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
static inline int32_t increment_sequence(int32_t sequence, int32_t increment) {
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

static inline long long item_ll(PyObject *t, Py_ssize_t i, int *ok) {
    long long r = PyLong_AsLongLong(PyTuple_GET_ITEM(t, i));
    if (r == -1 && PyErr_Occurred()) *ok = 0;
    return r;
}

/* The size of the entry at pos when it is well-framed, else -1 (the Python scanner judges it). */
static inline Py_ssize_t clean_entry_size(const uint8_t *data, Py_ssize_t pos, Py_ssize_t end) {
    if (pos < 0 || pos >= end - 17) return -1;
    int32_t size = be32(data + pos + 8);
    if (size < 14 || pos + 12 + (Py_ssize_t)size > end) return -1;
    if ((int8_t)data[pos + 16] >= 2 && size < 49) return -1;
    return 12 + (Py_ssize_t)size;
}

void header_from_bytes(const uint8_t *b, Py_ssize_t pos, Py_ssize_t entry_size, Py_ssize_t available, int check_crc,
                       Header *h);
int header_from_tuple(PyObject *t, Header *h);
PyObject *make_header(PyTypeObject *type, const Header *h);

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

int parse_record(const uint8_t *p, Py_ssize_t n, Py_ssize_t *pos, const BatchContext *c, RawRecord *r);
void next_header(const uint8_t *h, Py_ssize_t *pos, const uint8_t **key, int32_t *key_len, const uint8_t **value,
                 int32_t *value_len);
PyObject *decode_records(PyTypeObject *type, const uint8_t *p, Py_ssize_t n, Py_ssize_t count, const BatchContext *c,
                         int timestamp_type);
int append_position(PyObject *list, int64_t position);

static inline BatchContext context_of(const Header *h, int stream) {
    BatchContext c = {h->base_offset, h->base_ts, h->max_ts, (int32_t)h->bseq, (h->attributes & 0x08) != 0, stream};
    return c;
}

/* ==== the growing byte buffer (lines of text, packed rows) =============================== */

/* Bytes built in a growing buffer. The raw allocator, so lines can be formatted with the GIL
 * released (``nogil``: a failure sets no exception; the caller raises once it holds the GIL). */
typedef struct { char *buf; Py_ssize_t len, cap; int nogil; } Out;

static inline int out_reserve(Out *o, Py_ssize_t extra) {
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
#define OUT_LIT(o, lit) out_put((o), (lit), (Py_ssize_t)(sizeof(lit) - 1))

/* The buffer as bytes; the buffer is freed. */
static inline PyObject *out_finish(Out *o) {
    PyObject *b = PyBytes_FromStringAndSize(o->buf ? o->buf : "", o->len);
    PyMem_RawFree(o->buf);
    return b;
}

/* ==== text (_native_text.c) ================================================================ */

int valid_utf8(const uint8_t *s, Py_ssize_t n);

/* ==== entry points (the method table in _native.c) ========================================= */

PyObject *native_scan(PyObject *self, PyObject *args);
PyObject *native_columns(PyObject *self, PyObject *args);
PyObject *native_walk(PyObject *self, PyObject *args);
PyObject *native_verify_walk(PyObject *self, PyObject *args);
PyObject *native_decode_v2(PyObject *self, PyObject *args);
PyObject *native_decode_v2_batch(PyObject *self, PyObject *args);
PyObject *native_check_run(PyObject *self, PyObject *args);
PyObject *native_verify_records(PyObject *self, PyObject *args);
PyObject *native_batch_line(PyObject *self, PyObject *batch);
PyObject *native_batch_lines(PyObject *self, PyObject *args);
PyObject *native_record_line(PyObject *self, PyObject *args);
PyObject *native_render_lines(PyObject *self, PyObject *args);
PyObject *native_deep_lines(PyObject *self, PyObject *args);
PyObject *native_crc32c(PyObject *self, PyObject *args);
PyObject *native_index_odd(PyObject *self, PyObject *args);
PyObject *native_time_index_odd(PyObject *self, PyObject *args);
PyObject *native_first_disorder(PyObject *self, PyObject *args);
PyObject *native_recover_walk(PyObject *self, PyObject *args);
PyObject *native_columns_run(PyObject *self, PyObject *args);

#pragma GCC visibility pop

#endif
