"""The roofline calculator's tensor-core precisions (Part V): the datasheet's dense peaks where the book has
them, a plain sentence where it has none, two bytes an element for FP16/BF16. The calculator as the
library renders it now (the chapters embed it when they are executed)."""
import gemmlab as gl


def test_tensor_core_precisions(chromium, tmp_path):
    html = tmp_path / "roofline.html"
    html.write_text("<!doctype html><meta charset='utf-8'>" + gl.explorers.roofline_calculator()._repr_html_())
    page = chromium.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(html.as_uri())
    ex = page.locator('.gl-explorer[data-explorer="roofline"]')
    gpu, _, precision = (ex.locator("select").nth(i) for i in range(3))
    readout = ex.locator(".gl-readout")
    gpu.select_option(label="NVIDIA H200 (datasheet)")
    precision.select_option(label="FP32")
    fp32 = readout.inner_text()
    precision.select_option(label="TF32 tensor cores")
    tf32 = readout.inner_text()
    assert "TF32 tensor cores" in tf32 and "494.70 TFLOP/s" in tf32, tf32
    precision.select_option(label="FP16/BF16 tensor cores")
    fp16 = readout.inner_text()
    assert "989.40 TFLOP/s" in fp16, fp16
    # half the bytes of FP32 for the same GEMM: twice the intensity
    intensity = lambda text: float(text.split("intensity I = F/Q = ")[1].split()[0].replace(",", ""))  # noqa: E731
    assert abs(intensity(fp16) / intensity(fp32) - 2) < 0.01
    assert ex.locator("svg").first.inner_html().strip()
    gpu.select_option(label="Tesla T4 (datasheet)")           # FP16 tensor cores, no TF32 ones
    assert "65.00 TFLOP/s" in readout.inner_text(), readout.inner_text()
    precision.select_option(label="TF32 tensor cores")
    none = readout.inner_text()
    assert "no datasheet figure for Tesla T4" in none, none
    gpu.select_option(label="NVIDIA GeForce RTX 4060 (datasheet)")
    assert "no datasheet figure for NVIDIA GeForce RTX 4060" in readout.inner_text()
    assert not errors, errors
