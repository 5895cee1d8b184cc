"""What pickling the user's callables takes, and how it travels: the layer between the IR and the files emitted.

cloudpickle carries a callable to the server; this package is everything that knows how. ``picklers`` (portable,
deterministic cloudpickle: code as references into ``shipped_sources``, classes by value rebuilt by the server's
library in ``classes_by_value``, live objects made anew in ``live_objects``, CUDA tensors as host copies in
``cuda_tensors``); ``pickled_parts``, the one walk over what pickling an object takes, which ``unpicklable`` (the
part that cannot be pickled), ``attribute_chains`` (the chain of attributes to an object), ``shared_objects``
(objects two models hold) and ``cuda_scan`` (callables holding CUDA tensors, for ``ir/gpu_instances.py``) share.
It writes nothing (``repogen.emit`` does) and the IR never imports it: the IR is handed ``cuda_scan``'s findings.
"""
