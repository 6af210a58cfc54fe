/* Offset and time indexes: checked against a verify run (index_odd, time_index_odd,
 * first_disorder) and rebuilt by LogSegment.recover's loop (recover_walk). */

#include "_native_shared.h"

/* ==== entry points: index checks ========================================================== */

/* index_odd(packed, entry_positions, entry_relatives, start, stop, base) -> [entry numbers]
 * Merges the offset index entries [start, stop) (int32 arrays, positions ascending) with a
 * verify run's packed rows (position ascending): an entry is fine when a row starts at its
 * position and ends at base + its relative offset; the others are returned for the Python
 * checks (which know the rules for the rest). */
PyObject *native_index_odd(PyObject *self, PyObject *args) {
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
PyObject *native_time_index_odd(PyObject *self, PyObject *args) {
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
PyObject *native_first_disorder(PyObject *self, PyObject *args) {
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
PyObject *native_recover_walk(PyObject *self, PyObject *args) {
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

