/* v2 records: parsed from a records section, built as Record tuples, and the records entry
 * points: decode_v2, decode_v2_batch, check_run and verify_records. */

#include "_native_shared.h"

/* Reads one record at *pos; 1 when it is clean (Kafka would read it without complaint and its
 * offset and timestamp fit a Java long without wrapping), else 0. */
int parse_record(const uint8_t *p, Py_ssize_t n, Py_ssize_t *pos, const BatchContext *c, RawRecord *r) {
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
void next_header(const uint8_t *h, Py_ssize_t *pos, const uint8_t **key, int32_t *key_len,
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
PyObject *decode_records(PyTypeObject *type, const uint8_t *p, Py_ssize_t n, Py_ssize_t count,
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

/* ==== entry points: records ================================================================ */

PyObject *native_decode_v2(PyObject *self, PyObject *args) {
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

PyObject *native_decode_v2_batch(PyObject *self, PyObject *args) {
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

PyObject *native_check_run(PyObject *self, PyObject *args) {
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
int append_position(PyObject *list, int64_t position) {
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

PyObject *native_verify_records(PyObject *self, PyObject *args) {
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
