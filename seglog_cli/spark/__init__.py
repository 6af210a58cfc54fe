"""Reading and verifying Kafka log dirs with Spark (the optional extra: ``pip install 'seglog[spark]'``).

* :func:`register` adds the data sources ``seglog`` and ``seglog-batches`` (Spark 4.x,
  ``pyspark.sql.datasource``) to a session: ``spark.read.format("seglog").load(path)``.
* :func:`seglog_cli.spark.verify.verify_findings`: ``seglog verify`` with the partitions
  verified by Spark tasks; a DataFrame of findings with the CLI's codes.
* :func:`seglog_cli.spark.compat.read_records`: the same rows on Spark 3.5 (no Python data
  sources there) through ``binaryFile`` listing and ``mapInArrow``.

The planning and reading logic lives in :mod:`seglog_cli.spark.plan` and
:mod:`seglog_cli.spark.columns`, which need no JVM; the engine never imports this package.
"""

from __future__ import annotations

import contextlib
import sys


def register(spark, pushdown: bool = False) -> None:
    """Register ``seglog`` and ``seglog-batches`` with ``spark`` (a Spark 4.x SparkSession).

    ``pushdown=True``: ``where()`` filters on topic, partition, offset and timestamp become the
    options' seeks; it turns on ``spark.sql.python.filterPushdown.enabled`` (Spark plans no
    Python source that takes filters while it is off). Off by default because Spark 4.3.0 keeps
    the plan of a filtered query on the DataFrame it came from: a later unfiltered query of the
    same DataFrame silently reads only what the filtered one read (a wrong count is worse than a
    slow one); with pushdown on, load again for each differently filtered query."""
    from seglog_cli.spark import source

    if pushdown:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
        sources = (source.SeglogPushdownDataSource, source.SeglogPushdownBatchesDataSource)
    else:
        sources = (source.SeglogDataSource, source.SeglogBatchesDataSource)
    # s3a:// and other remote paths: the session's Hadoop fs.s3a.* settings become every read's
    # default storageOptions (a read's own storageOptions option wins)
    from seglog_cli.spark.remote import session_storage_options

    defaults = session_storage_options(spark)
    if defaults:
        import json

        text = json.dumps(defaults, sort_keys=True)
        sources = tuple(type(data_source.__name__, (data_source,), {"storage_defaults": text,
                                                                    "__module__": __name__})
                        for data_source in sources)
    with _planned_by_this_interpreter(spark):
        for data_source in sources:
            spark.dataSource.register(data_source)


# Spark 4.x starts the Python process that plans a read (the data source's schema, filters and
# partitions, on the driver) with the interpreter the registered data source carries, and the
# executors' tasks with the same one (PythonPlannerRunner.runInPython and
# UserDefinedPythonDataSource.createPythonFunction both take dataSourceCls.pythonExec), which
# pyspark fills from PYSPARK_PYTHON: the executors' interpreter. With a packed environment that
# is ./environment/bin/python, a path relative to an executor's work dir that does not exist on
# the driver. The executor-side runners (BaseArrowPythonRunner) take this session conf first.
EXECUTOR_PYTHON_CONF = "spark.sql.execution.pyspark.python"


@contextlib.contextmanager
def _planned_by_this_interpreter(spark):
    """Data sources registered inside are planned by this process's interpreter (the driver's,
    which imports pyspark and seglog: it is running this) while their tasks keep the executors'
    (PYSPARK_PYTHON, ``spark.pyspark.python``): the session conf
    ``spark.sql.execution.pyspark.python`` is set to it, unless it is set already. Nothing
    changes where both are the same interpreter, or on Spark Connect (the server plans)."""
    context = _classic_context(spark)
    executors = getattr(context, "pythonExec", None)
    driver = sys.executable
    if context is None or not driver or not executors or executors == driver:
        yield
        return
    if spark.conf.get(EXECUTOR_PYTHON_CONF, None) is None:
        spark.conf.set(EXECUTOR_PYTHON_CONF, executors)
    context.pythonExec = driver  # what pyspark's register() wraps the data source class with
    try:
        yield
    finally:
        context.pythonExec = executors


def _classic_context(spark):
    """The SparkContext of a classic session; None on Spark Connect (no JVM here)."""
    try:
        return spark.sparkContext
    except Exception:  # Spark Connect: sparkContext is not supported
        return None
