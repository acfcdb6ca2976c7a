"""The machinery every study of ``benchmarks/studies/`` uses: :mod:`.study` (declaration, run
loop, records), :mod:`.report` (results files, tables), :mod:`.registry` (methods: :mod:`.ours`
and :mod:`.peers`), :mod:`.data`, :mod:`.quality` and :mod:`.timing`."""
