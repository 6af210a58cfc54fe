"""Log dirs read where they live: ``s3://``/``s3a://``, ``gs://``, ``abfs(s)://``,
``hdfs://`` through fsspec.

Owns URL schemes, the filesystem layer and its one-line errors (``remote_urls``), the local view
of a remote tree made of sparse placeholders that the rest of the engine reads as local files
(``remote_view``), and the ranged fetches behind a placeholder with their read-ahead and hole
punching (``remote_files``). Not Kafka's tiered storage (that is ``storage.tiered``): these are
plain log dirs copied to an object store or HDFS. The filesystem layer is fsspec; pyarrow's
(``pyarrow.fs``) is the one pyarrow module used, as a measured alternative ranged reader.

May import: ``seglog_cli.formats`` and ``storage.log``.
"""
