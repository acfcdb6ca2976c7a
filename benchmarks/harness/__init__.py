"""The machinery every study of ``benchmarks/studies/`` uses: declaration and run loop
(:mod:`.study`), results files and tables (:mod:`.report`), methods (:mod:`.registry`)."""
