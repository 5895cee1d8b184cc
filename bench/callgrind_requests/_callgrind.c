/* Callgrind's client requests for bench/gpu_work.py (valgrind/callgrind.h): counting switched on and off from Python
   at the points the bench chooses, with nothing of its own counted in between. Built by bench/gpu_work.py with the
   C compiler and the Python headers at hand; outside valgrind every request is a no-op. */
#include <Python.h>
#include <valgrind/callgrind.h>

static PyObject *toggle(PyObject *module, PyObject *unused) {
    CALLGRIND_TOGGLE_COLLECT;
    Py_RETURN_NONE;
}

static PyObject *instrument(PyObject *module, PyObject *unused) {
    CALLGRIND_START_INSTRUMENTATION;
    Py_RETURN_NONE;
}

static PyObject *zero(PyObject *module, PyObject *unused) {
    CALLGRIND_ZERO_STATS;
    Py_RETURN_NONE;
}

static PyObject *dump(PyObject *module, PyObject *label) {
    const char *text = PyUnicode_AsUTF8(label);
    if (text == NULL) return NULL;
    CALLGRIND_DUMP_STATS_AT(text);
    Py_RETURN_NONE;
}

/* gated(work, *args, **kwargs): work(*args, **kwargs) with counting toggled off on the way in and on on the way out
   (the caller calls it only where counting is on). */
static PyObject *gated(PyObject *module, PyObject *args, PyObject *kwargs) {
    Py_ssize_t count = PyTuple_GET_SIZE(args);
    if (count < 1) {
        PyErr_SetString(PyExc_TypeError, "gated() needs the callable to run");
        return NULL;
    }
    CALLGRIND_TOGGLE_COLLECT;
    PyObject *rest = PyTuple_GetSlice(args, 1, count);
    PyObject *result = rest == NULL ? NULL : PyObject_Call(PyTuple_GET_ITEM(args, 0), rest, kwargs);
    Py_XDECREF(rest);
    CALLGRIND_TOGGLE_COLLECT;
    return result;
}

static PyObject *running(PyObject *module, PyObject *unused) { return PyBool_FromLong(RUNNING_ON_VALGRIND); }

/* Gate(work, busy, count): a callable (and method: it binds like a function) that runs work(*args, **kwargs) with
   nothing counted, where this thread is not in the set ``busy`` already (it is while it runs); ``count()`` runs
   first, not counted either. What it costs on the way in and out is a few hundred instructions of C, where a
   Python wrapper costs thousands. */
typedef struct {
    PyObject_HEAD
    PyObject *work;
    PyObject *busy;
    PyObject *count;
} Gate;

static void gate_dealloc(Gate *self) {
    Py_XDECREF(self->work);
    Py_XDECREF(self->busy);
    Py_XDECREF(self->count);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *gate_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *work, *busy, *count;
    if (!PyArg_ParseTuple(args, "OOO", &work, &busy, &count)) return NULL;
    if (!PySet_Check(busy)) {
        PyErr_SetString(PyExc_TypeError, "Gate(work, busy, count): busy is a set");
        return NULL;
    }
    Gate *self = (Gate *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    Py_INCREF(work);
    Py_INCREF(busy);
    Py_INCREF(count);
    self->work = work;
    self->busy = busy;
    self->count = count;
    return (PyObject *)self;
}

static PyObject *gate_call(Gate *self, PyObject *args, PyObject *kwargs) {
    PyObject *thread = PyLong_FromUnsignedLong(PyThread_get_thread_ident());
    if (thread == NULL) return NULL;
    int inside = PySet_Contains(self->busy, thread);
    if (inside != 0) {
        Py_DECREF(thread);
        return inside < 0 ? NULL : PyObject_Call(self->work, args, kwargs);
    }
    if (PySet_Add(self->busy, thread) < 0) {
        Py_DECREF(thread);
        return NULL;
    }
    CALLGRIND_TOGGLE_COLLECT;
    PyObject *counted = PyObject_CallNoArgs(self->count);
    PyObject *result = counted == NULL ? NULL : PyObject_Call(self->work, args, kwargs);
    Py_XDECREF(counted);
    CALLGRIND_TOGGLE_COLLECT;
    PySet_Discard(self->busy, thread);
    Py_DECREF(thread);
    return result;
}

static PyObject *gate_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyTypeObject GateType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_callgrind.Gate",
    .tp_basicsize = sizeof(Gate),
    .tp_dealloc = (destructor)gate_dealloc,
    .tp_call = (ternaryfunc)gate_call,
    .tp_descr_get = gate_get,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = gate_new,
    .tp_doc = "Gate(work, busy, count): work(*args, **kwargs), not counted by callgrind, outermost only.",
};

static PyMethodDef methods[] = {
    {"toggle", toggle, METH_NOARGS, "Counting on where it was off, off where it was on."},
    {"instrument", instrument, METH_NOARGS, "Instrumentation on (valgrind started with --instr-atstart=no)."},
    {"zero", zero, METH_NOARGS, "Every count so far set to zero."},
    {"dump", dump, METH_O, "The counts so far dumped under a label, then zeroed."},
    {"gated", (PyCFunction)(void (*)(void))gated, METH_VARARGS | METH_KEYWORDS, "work(*args, **kwargs), not counted."},
    {"running", running, METH_NOARGS, "Whether this process runs under valgrind."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_callgrind", NULL, -1, methods};

PyMODINIT_FUNC PyInit__callgrind(void) {
    if (PyType_Ready(&GateType) < 0) return NULL;
    PyObject *made = PyModule_Create(&module);
    if (made == NULL) return NULL;
    Py_INCREF(&GateType);
    if (PyModule_AddObject(made, "Gate", (PyObject *)&GateType) < 0) {
        Py_DECREF(&GateType);
        Py_DECREF(made);
        return NULL;
    }
    return made;
}
