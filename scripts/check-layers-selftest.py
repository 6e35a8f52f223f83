#!/usr/bin/python3
"""Proves scripts/check-layers.py can fail: it runs the checker on small trees built in a
temporary folder, with planted upward arrows (an #include, a CMake dependency) and without.
Used by the layer_check_selftest test."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, "check-layers.py")
REAL_TABLE = os.path.join(os.path.dirname(HERE), "cmake", "layers.txt")

TINY_TABLE = """\
# A tiny table: engine over kv over base; the server sees the public API only.
*: pagoda/status.h
pagoda [include/pagoda]:
base:
kernels: base
kv: base
engine: kv pagoda/engine.h
server [server]: pagoda/* link:base
"""

# A clean tree: every arrow points down.
CLEAN_TREE = {
    "include/pagoda/status.h": "#pragma once\n",
    "include/pagoda/engine.h": '#pragma once\n#include "pagoda/status.h"\n',
    "src/base/log.h": '#pragma once\n#include <string>\n#include "pagoda/status.h"\n',
    "src/base/CMakeLists.txt": "pagoda_library(base DEPS fmt::fmt)\n",
    "src/kernels/ops.h": '#pragma once\n#include "base/log.h"\n',
    # The ISA subfolders are still kernels.
    "src/kernels/cpu/x86/avx2.cc": '#include "kernels/ops.h"\n#include "hwy/base.h"\n',
    "src/kernels/CMakeLists.txt": "pagoda_library(kernels DEPS pagoda::base PRIVATE_DEPS hwy::hwy)\n",
    "src/kv/kv_manager.h": '#pragma once\n#include "base/log.h"\n',
    "src/kv/CMakeLists.txt": "pagoda_library(kv DEPS pagoda::base)\n",
    # engine reaches base through kv (the closure) and status.h through pagoda/engine.h.
    "src/engine/engine_core.h": (
        '#pragma once\n#include "base/log.h"\n#include "kv/kv_manager.h"\n'
        '#include "pagoda/engine.h"\n#include "pagoda/status.h"\n#include "local.h"\n'),
    "src/engine/CMakeLists.txt": (
        "# engine: the step loop (pagoda::kernels is not linked: a comment is no dependency)\n"
        "pagoda_library(engine\n  DEPS pagoda::kv\n  PRIVATE_DEPS pagoda::base)\n"),
    "server/http_server.h": '#pragma once\n#include "pagoda/engine.h"\n#include "server/router.h"\n',
    "server/router.h": "#pragma once\n",
    "server/CMakeLists.txt": (
        "add_library(pagoda_server STATIC http_server.cc)\n"
        "target_link_libraries(pagoda_server PUBLIC Boost::headers pagoda::base)\n"),
}


def write_tree(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


class CheckLayersTest(unittest.TestCase):
    def run_checker(self, files, table=TINY_TABLE):
        with tempfile.TemporaryDirectory() as root:
            write_tree(root, files)
            table_path = os.path.join(root, "layers.txt")
            with open(table_path, "w", encoding="utf-8") as f:
                f.write(table)
            done = subprocess.run([sys.executable, CHECKER, "--root", root, "--table", table_path],
                                  capture_output=True, text=True, check=False)
        return done.returncode, done.stdout + done.stderr

    def assert_fails_with(self, files, *expected, table=TINY_TABLE):
        code, output = self.run_checker(files, table)
        self.assertEqual(code, 1, output)
        for text in expected:
            self.assertIn(text, output)
        self.assertIn("check-layers: ", output)
        return output

    def test_clean_tree_passes(self):
        code, output = self.run_checker(CLEAN_TREE)
        self.assertEqual(code, 0, output)
        self.assertIn("all arrows allowed", output)
        self.assertIn("9 files, 11 includes, 5 CMake deps", output)

    def test_planted_upward_include_fails(self):
        tree = dict(CLEAN_TREE)
        tree["src/kv/block_pool.h"] = '#pragma once\n#include <vector>\n\n#include "engine/engine_core.h"\n'
        self.assert_fails_with(
            tree, 'src/kv/block_pool.h:4: #include "engine/engine_core.h": kv may not depend on engine')

    def test_upward_include_in_isa_subfolder_fails(self):
        tree = dict(CLEAN_TREE)
        tree["src/kernels/cpu/x86/avx512.cc"] = '#include "kv/kv_manager.h"\n'
        self.assert_fails_with(
            tree, 'src/kernels/cpu/x86/avx512.cc:1: #include "kv/kv_manager.h": kernels may not depend on kv')

    def test_planted_upward_cmake_dep_fails(self):
        tree = dict(CLEAN_TREE)
        tree["src/kv/CMakeLists.txt"] = "pagoda_library(kv DEPS pagoda::base\n  PRIVATE_DEPS pagoda::engine)\n"
        self.assert_fails_with(tree, "src/kv/CMakeLists.txt:2: pagoda::engine: kv may not depend on engine")

    def test_server_sees_only_the_public_api(self):
        tree = dict(CLEAN_TREE)
        tree["server/router.h"] = '#pragma once\n#include "base/log.h"\n'
        tree["server/CMakeLists.txt"] += "target_link_libraries(pagoda_server PRIVATE pagoda::kv)\n"
        self.assert_fails_with(
            tree, 'server/router.h:2: #include "base/log.h": server may not depend on base',
            "server/CMakeLists.txt:3: pagoda::kv: server may not depend on kv")

    def test_public_header_not_granted_fails(self):
        tree = dict(CLEAN_TREE)
        tree["src/kv/kv_manager.h"] = '#pragma once\n#include "pagoda/engine.h"\n'
        self.assert_fails_with(
            tree, 'src/kv/kv_manager.h:2: #include "pagoda/engine.h": kv may not depend on pagoda')

    def test_folder_without_row_fails(self):
        tree = dict(CLEAN_TREE)
        tree["src/foo/foo.h"] = "#pragma once\n"
        tree["src/kv/kv_manager.h"] = '#pragma once\n#include "foo/foo.h"\n'
        self.assert_fails_with(tree, "src/foo has no row in layers.txt",
                               'src/kv/kv_manager.h:2: #include "foo/foo.h": kv may not depend on foo')

    def test_cycle_in_table_fails(self):
        self.assert_fails_with(CLEAN_TREE, "the table has a cycle: kv -> engine -> kv",
                               table=TINY_TABLE.replace("kv: base", "kv: base engine"))

    def test_real_table_rejects_upward_include(self):
        with open(REAL_TABLE, encoding="utf-8") as f:
            table = f.read()
        tree = dict(CLEAN_TREE)
        tree["src/runner/model_runner.h"] = '#pragma once\n#include "step/step_plan.h"\n#include "engine/engine_core.h"\n'
        tree["src/step/step_plan.h"] = '#pragma once\n#include "kv/kv_manager.h"\n'
        self.assert_fails_with(
            tree, 'src/runner/model_runner.h:3: #include "engine/engine_core.h": runner may not depend on engine',
            table=table)


if __name__ == "__main__":
    unittest.main()
