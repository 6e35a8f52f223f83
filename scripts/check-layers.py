#!/usr/bin/python3
"""Checks that every arrow between pagoda's layers points down.

The layer table (cmake/layers.txt) says which folder may depend on which. This script reads
every quoted #include in the layers' folders (src/<layer>/, include/pagoda/, server/, cli/) and
every pagoda:: dependency in their CMakeLists.txt files, and reports each one the table does not
allow, naming the file and line. It fails (exit status 1) when it reports anything.

    scripts/check-layers.py [--root DIR] [--table FILE]

Standard library only (Debian's /usr/bin/python3). Used by the layer_check test.
"""

import argparse
import os
import re
import sys

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE_SUFFIXES = (".h", ".cc", ".inc")
ROW_RE = re.compile(r"^(\*|[A-Za-z0-9_]+)\s*(?:\[([^\]]*)\])?\s*:(.*)$")
NAME_RE = re.compile(r"^[A-Za-z0-9_]+$")
COMMAND_RE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")
PAGODA_TARGET_RE = re.compile(r"^pagoda(?:::|_)([A-Za-z0-9_]+)$")


class Layer:
    def __init__(self, name):
        self.name = name
        self.folder = None  # relative to the root, '/'-separated
        self.deps = []  # (token, table line): "layer", "layer/*" or "layer/file.h"
        self.links = []  # link-only layers ("link:layer")
        # Filled in by resolve(): what the layer may include and link.
        self.allowed_layers = set()
        self.allowed_files = set()


class Table:
    def __init__(self):
        self.layers = {}  # name -> Layer, in table order
        self.everyone = []  # the "*" row's deps
        self.errors = []  # (line, message)


def strip_comment(line):
    pos = line.find("#")
    return line if pos < 0 else line[:pos]


def read_table(path):
    table = Table()
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for number, raw in enumerate(lines, 1):
        line = strip_comment(raw).strip()
        if not line:
            continue
        match = ROW_RE.match(line)
        if not match:
            table.errors.append((number, f"cannot read row '{line}' (expected 'name [folder]: deps')"))
            continue
        name, folder, deps = match.group(1), match.group(2), match.group(3).split()
        if name == "*":
            if folder is not None:
                table.errors.append((number, "the row '*' has no folder"))
            table.everyone.extend((dep, number) for dep in deps)
            continue
        layer = table.layers.setdefault(name, Layer(name))
        if folder is not None:
            folder = folder.strip().strip("/")
            if layer.folder is not None and layer.folder != folder:
                table.errors.append((number, f"{name} is given two folders: {layer.folder} and {folder}"))
            layer.folder = folder
        for dep in deps:
            if dep.startswith("link:"):
                layer.links.append((dep[len("link:"):], number))
            else:
                layer.deps.append((dep, number))
    for layer in table.layers.values():
        if layer.folder is None:
            layer.folder = "src/" + layer.name
    # Every dep must name a row.
    rows = [(layer.name, layer.deps + layer.links) for layer in table.layers.values()]
    rows.append(("*", table.everyone))
    for name, deps in rows:
        for dep, number in deps:
            target = dep.split("/", 1)[0]
            if not NAME_RE.match(target) or target not in table.layers:
                table.errors.append((number, f"{name}: '{dep}' names no layer of the table"))
    return table


def split_dep(dep):
    """'model' -> ('model', None); 'pagoda/*' -> ('pagoda', None); 'pagoda/x.h' -> ('pagoda', 'pagoda/x.h')."""
    layer, _, rest = dep.partition("/")
    if rest in ("", "*"):
        return layer, None
    return layer, dep


def quoted_includes(path):
    """[(line number, included path)] of the file's #include "..." lines."""
    result = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            match = INCLUDE_RE.match(line)
            if match:
                result.append((number, match.group(1)))
    return result


def header_includes_closure(root, table, granted):
    """A granted header "layer/file.h" also grants that layer's headers it includes."""
    result = set()
    pending = list(granted)
    while pending:
        include = pending.pop()
        if include in result:
            continue
        result.add(include)
        layer_name, _, rest = include.partition("/")
        layer = table.layers.get(layer_name)
        if layer is None:
            continue
        path = os.path.join(root, layer.folder, rest)
        if not os.path.isfile(path):
            continue
        for _, child in quoted_includes(path):
            if child.partition("/")[0] == layer_name:
                pending.append(child)
    return result


def resolve(root, table):
    """Fills each layer's allowed_layers and allowed_files: the closure of its row."""
    state = {}  # name -> "visiting" | "done"

    def visit(layer, chain, line):
        if state.get(layer.name) == "done":
            return
        if state.get(layer.name) == "visiting":
            cycle = chain[chain.index(layer.name):] + [layer.name]
            table.errors.append((line, "the table has a cycle: " + " -> ".join(cycle)))
            return
        state[layer.name] = "visiting"
        for dep, dep_line in layer.deps + table.everyone:
            dep_name, file = split_dep(dep)
            if dep_name == layer.name or dep_name not in table.layers:
                continue
            if file is not None:
                layer.allowed_files.add(file)
                continue
            dep_layer = table.layers[dep_name]
            visit(dep_layer, chain + [layer.name], dep_line)
            layer.allowed_layers.add(dep_name)
            layer.allowed_layers |= dep_layer.allowed_layers
            layer.allowed_files |= dep_layer.allowed_files
        state[layer.name] = "done"

    for layer in table.layers.values():
        visit(layer, [], 0)
    for layer in table.layers.values():
        layer.allowed_files = header_includes_closure(root, table, layer.allowed_files)


def allowed_text(layer):
    files = sorted(f for f in layer.allowed_files if f.partition("/")[0] not in layer.allowed_layers)
    words = sorted(layer.allowed_layers) + files
    return " ".join(words) if words else "nothing"


def layer_files(root, table):
    """[(relative path, layer)] for every file in a layer's folder; a folder that is another
    row's folder belongs to that row."""
    folder_to_layer = {layer.folder: layer for layer in table.layers.values()}
    result = []
    for layer in table.layers.values():
        top = os.path.join(root, layer.folder)
        if not os.path.isdir(top):
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
            dirnames[:] = sorted(d for d in dirnames if f"{rel_dir}/{d}" not in folder_to_layer)
            for filename in sorted(filenames):
                result.append((f"{rel_dir}/{filename}", layer))
    return result


def check_includes(root, table, files, report):
    """Reports each disallowed include; returns (number of source files, number of includes)."""
    num_files = 0
    num_includes = 0
    for rel, layer in files:
        if not rel.endswith(SOURCE_SUFFIXES):
            continue
        num_files += 1
        for number, include in quoted_includes(os.path.join(root, rel)):
            target, slash, _ = include.partition("/")
            if not slash:
                continue  # "file.h": the including file's own folder
            if target in table.layers:
                num_includes += 1
                if (target == layer.name or target in layer.allowed_layers or
                        include in layer.allowed_files):
                    continue
                report(rel, number, f'#include "{include}": {layer.name} may not depend on '
                       f"{target} (allowed: {allowed_text(layer)})")
            elif os.path.isdir(os.path.join(root, "src", target)):
                num_includes += 1
                report(rel, number, f'#include "{include}": {layer.name} may not depend on '
                       f"{target} (src/{target} has no row in the layer table)")
            # Anything else is outside the layers (a system or third-party header).
    return num_files, num_includes


def cmake_commands(text):
    """[(command, [(argument, line)])] of a CMake file: comments removed, arguments split on
    blanks (quotes and generator expressions are kept as written)."""
    lines = [strip_comment(line) for line in text.splitlines()]
    flat = "\n".join(lines)
    commands = []
    pos = 0
    while True:
        match = COMMAND_RE.search(flat, pos)
        if not match:
            break
        depth = 1
        end = match.end()
        while end < len(flat) and depth:
            if flat[end] == "(":
                depth += 1
            elif flat[end] == ")":
                depth -= 1
            end += 1
        body_start = match.end()
        body = flat[body_start:end - 1]
        args = []
        for arg in re.finditer(r"[^\s()]+", body):
            line = flat.count("\n", 0, body_start + arg.start()) + 1
            args.append((arg.group(0), line))
        commands.append((match.group(1).lower(), args))
        pos = end
    return commands


def check_cmake(root, table, files, report):
    """Reports each disallowed pagoda:: dependency; returns the number of dependencies read."""
    cmake_files = [(rel, layer) for rel, layer in files if rel.endswith("/CMakeLists.txt")]
    parsed = []
    target_to_layer = {}
    for rel, layer in cmake_files:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            commands = cmake_commands(f.read())
        parsed.append((rel, layer, commands))
        for command, args in commands:
            if not args:
                continue
            if command == "pagoda_library":
                target_to_layer["pagoda_" + args[0][0]] = layer
                target_to_layer["pagoda::" + args[0][0]] = layer
            elif command in ("add_library", "add_executable"):
                target_to_layer[args[0][0]] = layer

    num_deps = 0
    for rel, layer, commands in parsed:
        for command, args in commands:
            if command == "pagoda_library":
                owner = layer
            elif command == "target_link_libraries" and args:
                owner = target_to_layer.get(args[0][0], layer)
            else:
                continue
            for dep, number in args[1:]:
                if dep in target_to_layer:
                    dep_layer = target_to_layer[dep].name
                else:
                    match = PAGODA_TARGET_RE.match(dep)
                    if not match:
                        continue
                    dep_layer = match.group(1)
                num_deps += 1
                if dep_layer not in table.layers:
                    report(rel, number, f"{dep}: {owner.name} may not depend on {dep_layer} "
                           "(it has no row in the layer table)")
                elif not (dep_layer == owner.name or dep_layer in owner.allowed_layers or
                          dep_layer in (name for name, _ in owner.links)):
                    allowed = allowed_text(owner)
                    links = sorted(name for name, _ in owner.links)
                    if links:
                        allowed += " (link only: " + " ".join(links) + ")"
                    report(rel, number, f"{dep}: {owner.name} may not depend on {dep_layer} "
                           f"(allowed: {allowed})")
    return num_deps


def main():
    default_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=default_root, help="the tree to check (default: this repository)")
    parser.add_argument("--table", help="the layer table (default: ROOT/cmake/layers.txt)")
    options = parser.parse_args()
    root = os.path.abspath(options.root)
    table_path = options.table or os.path.join(root, "cmake", "layers.txt")
    table_name = os.path.relpath(table_path, root)
    if table_name.startswith(".."):
        table_name = table_path
    try:
        table = read_table(table_path)
    except OSError as error:
        print(f"check-layers: cannot read the layer table: {error}", file=sys.stderr)
        return 2

    problems = []

    def report(path, line, message):
        problems.append((path, line, message))

    resolve(root, table)
    for line, message in table.errors:
        report(table_name, line, message)

    # Every folder under src/ is a layer with a row.
    folders = {layer.folder for layer in table.layers.values()}
    src = os.path.join(root, "src")
    if os.path.isdir(src):
        for entry in sorted(os.listdir(src)):
            if os.path.isdir(os.path.join(src, entry)) and f"src/{entry}" not in folders:
                report(None, None, f"src/{entry} has no row in {table_name}")

    files = layer_files(root, table)
    num_files, num_includes = check_includes(root, table, files, report)
    num_deps = check_cmake(root, table, files, report)

    counts = f"{num_files} files, {num_includes} includes, {num_deps} CMake deps"
    if problems:
        for path, line, message in problems:
            if path is None:
                print(message)
            else:
                print(f"{path}:{line}: {message}")
        print(f"check-layers: {len(problems)} disallowed arrows or table errors ({counts})")
        return 1
    print(f"check-layers: {counts}, all arrows allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
