#!/usr/bin/env python3
"""Reads a table with pyiceberg's StaticTable (no catalog: straight from a metadata file) and prints
its rows as JSON, sorted by id, for IcebergInteropTest to compare with what HyperStream wrote.

    python tests/pyiceberg_read.py <metadata.json> [snapshot id]
"""
import json
import sys

from pyiceberg.table import StaticTable


def main():
    table = StaticTable.from_metadata(sys.argv[1])
    scan = table.scan(snapshot_id=int(sys.argv[2])) if len(sys.argv) > 2 else table.scan()
    rows = scan.to_arrow().sort_by("id").to_pylist()
    print(json.dumps({"snapshot": table.current_snapshot().snapshot_id, "rows": rows}))


if __name__ == "__main__":
    main()
