/* DumpLogSegments' lines: the batch and record line formats, strict UTF-8, and the text entry
 * points: batch_line(s), record_line, render_lines and deep_lines. */

#include "_native_shared.h"

static int out_str(Out *o, const char *s) { return out_put(o, s, (Py_ssize_t)strlen(s)); }

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
int valid_utf8(const uint8_t *s, Py_ssize_t n) {
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

/* ==== entry points: text =================================================================== */

PyObject *native_batch_line(PyObject *self, PyObject *batch) {
    Header h;
    if (!header_from_tuple(batch, &h)) return NULL;
    if (h.magic >= 2 && !h.has_count) { PyErr_SetString(PyExc_TypeError, "v2 batch without a count"); return NULL; }
    Out o = {0};
    if (!format_batch(&o, &h)) { PyMem_RawFree(o.buf); return NULL; }
    return out_finish(&o);
}

PyObject *native_batch_lines(PyObject *self, PyObject *args) {
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

PyObject *native_record_line(PyObject *self, PyObject *args) {
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

PyObject *native_render_lines(PyObject *self, PyObject *args) {
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
PyObject *native_deep_lines(PyObject *self, PyObject *args) {
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
