"""Build hook for the optional compiled hot loops (seglog_cli/storage/log/_native*.c, one extension).

All metadata lives in pyproject.toml. The extension is optional: without a C compiler the
install still succeeds and seglog runs its pure-Python engine (same results, slower).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "seglog_cli.storage.log._native",
            sources=[f"seglog_cli/storage/log/{name}.c" for name in (
                "_native", "_native_crc", "_native_framing", "_native_records", "_native_text", "_native_indexes",
                "_native_columns")],
            depends=["seglog_cli/storage/log/_native_shared.h"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
