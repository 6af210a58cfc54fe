"""Build hook for the optional compiled hot loops (seglog_cli/storage/log/_native.c).

All metadata lives in pyproject.toml. The extension is optional: without a C compiler the
install still succeeds and seglog runs its pure-Python engine (same results, slower).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "seglog_cli.storage.log._native",
            sources=["seglog_cli/storage/log/_native.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
