/* Batch headers (from the file bytes or a BatchHeader tuple) and the framing entry points: scan,
 * walk, columns and verify_walk over well-framed entries. */

#include "_native_shared.h"

int header_from_tuple(PyObject *t, Header *h) {
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
void header_from_bytes(const uint8_t *b, Py_ssize_t pos, Py_ssize_t entry_size,
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
        h->computed = check_crc ? crc32_ieee(b + 16, (size_t)(entry_size - 16)) : 0;
    }
}

PyObject *make_header(PyTypeObject *type, const Header *h) {
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

/* ==== entry points: framing ================================================================ */

PyObject *native_scan(PyObject *self, PyObject *args) {
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
PyObject *native_columns(PyObject *self, PyObject *args) {
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

PyObject *native_walk(PyObject *self, PyObject *args) {
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
 * where the leader epoch changes. state is OffsetOrder.state (see verify/offset_order.py):
 * (prev_last|None, before_last, prev_pos, prev_first, prev_epoch, before_epoch, prev_epoch_pos,
 * epoch_start_pos);
 * only batches whose headers are trusted (CRC and magic good) move it. */
PyObject *native_verify_walk(PyObject *self, PyObject *args) {
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
