"""``@first_value`` and ``@triton_context``: decorators that work in both calling conventions.

Either below ``@batch`` (inputs as keyword arrays) or on the list of requests, they hand the
callable something it would not get as a tensor: one value per batch (``first_value``), or the
model's :class:`~.context.TritonContext` (``triton_context``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from .decorator_base import SPECIAL_KEYS, TRITON_CONTEXT_FIELD_NAME, Decorated, split_kwargs, split_requests
from .errors import InferenceError

# -- @first_value ---------------------------------------------------------------------------------


def first_value(
    *keys: str, squeeze_single_values: bool = True, strict: bool = True
) -> Callable[[Callable[..., Any]], Any]:
    """Replace the selected inputs by their first row: one value per batch, e.g. a temperature.

    With ``strict`` every row must be equal; with ``squeeze_single_values`` a one-element row
    becomes a numpy scalar. Works below ``@batch`` (keyword arrays) or on the list of requests.
    """
    reserved = [key for key in keys if key in SPECIAL_KEYS]
    if reserved:
        raise ValueError(
            f"The keys {', '.join(reserved)} are not allowed as keys for @first_value wrapper; "
            f"they are reserved: {', '.join(sorted(SPECIAL_KEYS))}"
        )
    return functools.partial(_FirstValue, keys=tuple(keys), squeeze_single_values=squeeze_single_values, strict=strict)


class _FirstValue(Decorated):
    def __init__(self, func: Callable[..., Any], keys: tuple[str, ...], squeeze_single_values: bool, strict: bool):
        super().__init__(func)
        self.keys = keys
        self.squeeze_single_values = squeeze_single_values
        self.strict = strict

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        inputs, _ = split_kwargs(kwargs)
        head = args if inputs else args[:-1]
        context = self._context(head)
        if context is not None and not context.model_config.batching:
            raise InferenceError("The @first_value decorator can only be used with models that support batching.")
        if inputs:
            kwargs.update(self._replace(inputs))
            return self.__wrapped__(*args, **kwargs)
        head, requests = split_requests(args)
        for request in requests:
            request.update(self._replace(request))
        return self.__wrapped__(*head, requests, **kwargs)

    def _replace(self, inputs: Any) -> dict[str, Any]:
        return {key: self._first(key, inputs[key]) for key in self.keys if key in inputs}

    def _first(self, name: str, values: Any) -> Any:
        values = np.asarray(values)
        if values.ndim == 0 or values.shape[0] == 0:
            raise InferenceError(f"@first_value: input {name!r} has shape {values.shape}; expected a batch axis")
        if self.strict and not bool(np.all(values == values[:1])):
            raise InferenceError(
                f"The values on the {name!r} input are not equal. To proceed, either disable strict mode in "
                f"@first_value wrapper or ensure that the values always are consistent. The current values of "
                f"{name!r} are {values!r}."
            )
        first = values[0]
        if self.squeeze_single_values and not np.isscalar(first) and all(n == 1 for n in np.shape(first)):
            first = np.squeeze(first)[()]
        return first


# -- @triton_context ------------------------------------------------------------------------------


class triton_context(Decorated):  # noqa: N801 - PyTriton's public name
    """Pass the model's :class:`TritonContext` as the ``triton_context`` keyword argument.

    ``triton_context.model_config`` (or PyTriton's ``model_configs[infer_func]``) describes the
    model's inputs, outputs and batching; the context also names the instance and its device.
    Decorating a class passes it to the constructor.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        context = self._context(args)
        if context is None:
            raise InferenceError(
                "Wrapped function or object must bound with triton to get __triton_context__: no triton "
                "context is bound (the runtime binds it when serving; in tests use repogen.runtime.bind_context)"
            )
        kwargs[TRITON_CONTEXT_FIELD_NAME] = context
        return self.__wrapped__(*args, **kwargs)
