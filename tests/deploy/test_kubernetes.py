"""deploy/kubernetes: the overlays render and validate offline (bundled OpenAPI schemas), and agree with
the image, the app's settings and routes, and the drain on SIGTERM."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess

import pytest
import yaml
from deployfiles import REPO, check_settings_accept, drain_budget_s

KUBE = REPO / "deploy" / "kubernetes"
OVERLAYS = {"gpu": KUBE / "overlays" / "gpu", "cpu": KUBE / "overlays" / "cpu"}
INFERENCE_SERVICE = KUBE / "kserve" / "inferenceservice.yaml"
ADAPTER_VALUES = KUBE / "prometheus-adapter" / "values.yaml"
GRAFANA_DASHBOARD = REPO / "deploy" / "grafana" / "vit-digits.json"
PENDING_METRIC = "vit_digits_pending_requests"

_spec = importlib.util.spec_from_file_location("kube_render", REPO / "scripts" / "kube_render.py")
kube_render = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kube_render)


@pytest.fixture(params=sorted(OVERLAYS))
def overlay(request) -> tuple[str, dict[str, dict]]:
    """("gpu" | "cpu", kind -> the rendered document)."""
    docs = kube_render.render(OVERLAYS[request.param])
    by_kind = {d["kind"]: d for d in docs}
    assert len(by_kind) == len(docs), "one document per kind"
    return request.param, by_kind


def pod_spec(doc: dict) -> dict:
    return doc["spec"]["predictor"] if doc["kind"] == "InferenceService" else doc["spec"]["template"]["spec"]


def env_dict(container: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", [])}


def workloads(overlay) -> list[dict]:
    return [overlay[1]["Deployment"], yaml.safe_load(INFERENCE_SERVICE.read_text())]


# --- rendering and schemas --------------------------------------------------------------------------


def test_overlays_validate_against_the_kubernetes_schemas():
    pytest.importorskip("kubernetes_validate", reason="pip install kubernetes-validate (dev extra)")
    for name, directory in OVERLAYS.items():
        docs = kube_render.render(directory)
        assert {d["kind"] for d in docs} >= {
            "Deployment",
            "Service",
            "HorizontalPodAutoscaler",
            "PodDisruptionBudget",
            "ServiceMonitor",
            "PrometheusRule",
        }
        assert kube_render.validate(docs) == [], name


def test_the_validator_catches_mistakes():
    """Negative control: strict validation rejects unknown fields and wrong types."""
    pytest.importorskip("kubernetes_validate", reason="pip install kubernetes-validate (dev extra)")
    docs = kube_render.render(OVERLAYS["gpu"])
    typo = next(d for d in docs if d["kind"] == "Deployment")
    typo["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    (error,) = kube_render.validate([typo])
    assert "readinesProbe" in error, error
    wrong_type = next(d for d in kube_render.render(OVERLAYS["gpu"]) if d["kind"] == "Service")
    wrong_type["spec"]["ports"][0]["port"] = "eight thousand"
    (error,) = kube_render.validate([wrong_type])
    assert "eight thousand" in error, error


def test_renderer_refuses_what_it_does_not_implement(tmp_path):
    (tmp_path / "kustomization.yaml").write_text("resources: []\nnamePrefix: x-\n")
    with pytest.raises(ValueError, match="namePrefix"):
        kube_render.render(tmp_path)


@pytest.mark.parametrize("name", sorted(OVERLAYS))
def test_rendering_matches_real_kustomize(name):
    """Where kustomize or kubectl is installed, it renders the overlays exactly as scripts/kube_render.py."""
    if shutil.which("kustomize"):
        cmd = ["kustomize", "build", str(OVERLAYS[name])]
    elif shutil.which("kubectl"):
        cmd = ["kubectl", "kustomize", str(OVERLAYS[name])]
    else:
        pytest.skip("neither kustomize nor kubectl installed")
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)

    def normal(docs):
        # Merge order of named lists (env, containers) is the one thing the two may differ in.
        def walk(x):
            if isinstance(x, dict):
                return {k: walk(v) for k, v in x.items()}
            if isinstance(x, list):
                items = [walk(v) for v in x]
                named = all(isinstance(v, dict) and "name" in v for v in items)
                return sorted(items, key=lambda v: v["name"]) if named else items
            return x

        docs = yaml.safe_load(yaml.safe_dump(list(docs)))
        return sorted((walk(d) for d in docs), key=lambda d: (d["kind"], d["metadata"]["name"]))

    assert normal(kube_render.render(OVERLAYS[name])) == normal(yaml.safe_load_all(done.stdout))


# --- the pod against the image and the app ----------------------------------------------------------


def test_pod_runs_the_images_command_on_its_ports(overlay, serve_argv, exposed_ports, app_env):
    for doc in workloads(overlay):
        (container,) = pod_spec(doc)["containers"]
        assert container["command"] == serve_argv == ["python", "-m", "app"]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        if doc["kind"] == "InferenceService":  # KServe routes one port per container: HTTP
            assert list(ports.values()) == [exposed_ports[0]], ports
        else:
            assert ports == {"http": exposed_ports[0], "grpc": exposed_ports[1]}
        env = env_dict(container)
        assert env.get("HOST", app_env["HOST"]) == "0.0.0.0"
        assert int(env.get("PORT", app_env["PORT"])) == exposed_ports[0]
        assert int(env.get("GRPC_PORT", app_env["GRPC_PORT"])) == exposed_ports[1]


def test_pod_env_is_real_settings(overlay, app_settings, app_env, monkeypatch):
    for doc in workloads(overlay):
        (container,) = pod_spec(doc)["containers"]
        env = env_dict(container)
        assert set(env) <= set(app_env), f"not settings of the app: {sorted(set(env) - set(app_env))}"
        check_settings_accept(app_settings, env, monkeypatch)


def test_probes_hit_the_apps_health_routes(overlay, serves_get, exposed_port):
    for doc in workloads(overlay):
        (container,) = pod_spec(doc)["containers"]
        ports = {p.get("name"): p["containerPort"] for p in container["ports"]}
        expected = {"readinessProbe": "/v2/health/ready", "livenessProbe": "/v2/health/live"}
        for probe, path in expected.items():
            get = container[probe]["httpGet"]
            assert get["path"] == path and serves_get(path), (doc["kind"], probe)
            assert ports.get(get["port"], get["port"]) == exposed_port
        if "startupProbe" in container:
            assert serves_get(container["startupProbe"]["httpGet"]["path"])


def test_startup_allows_model_loading_like_the_image(overlay, runtime):
    """The startup probe gives as long as the image's HEALTHCHECK start period before liveness counts."""
    (container,) = pod_spec(overlay[1]["Deployment"])["containers"]
    probe = container["startupProbe"]
    start_period = runtime.last("HEALTHCHECK").args.split("--start-period=")[1].split()[0]
    assert probe["periodSeconds"] * probe["failureThreshold"] >= float(start_period.rstrip("s"))


def test_termination_grace_covers_prestop_and_the_drain(overlay, app_env):
    for doc in workloads(overlay):
        spec = pod_spec(doc)
        (container,) = spec["containers"]
        env = {**app_env, **env_dict(container)}
        pre_stop = container["lifecycle"]["preStop"]["exec"]["command"]
        assert pre_stop[0] == "sleep", "preStop keeps serving while endpoints are removed"
        budget = float(pre_stop[1]) + drain_budget_s(env)
        assert spec["terminationGracePeriodSeconds"] > budget, "the kubelet would SIGKILL a draining pod"


def test_pod_is_non_root_and_read_only(overlay, runtime):
    uid = int(runtime.last("USER").args.split(":")[0])
    for doc in workloads(overlay):
        spec = pod_spec(doc)
        (container,) = spec["containers"]
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] == uid, "the image's user (owns /models)"
        sec = container["securityContext"]
        assert sec["readOnlyRootFilesystem"] is True and sec["allowPrivilegeEscalation"] is False
        assert sec["capabilities"]["drop"] == ["ALL"]
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert {"/tmp", "/dev/shm"} <= set(mounts), "the app's only writable paths"
        assert volumes[mounts["/dev/shm"]]["emptyDir"]["medium"] == "Memory"
        assert "/models" not in mounts, "the image's shipped store is served (mount another read-only)"


def test_overlays_pick_the_device(overlay):
    kind, docs = overlay
    (container,) = pod_spec(docs["Deployment"])["containers"]
    limits = container["resources"]["limits"]
    if kind == "gpu":
        assert int(limits["nvidia.com/gpu"]) == 1, "one GPU per pod"
        assert env_dict(container)["DEVICE"] == "cuda"
        assert container["image"].endswith(":cuda")
    else:
        assert "nvidia.com/gpu" not in limits
        assert env_dict(container)["DEVICE"] == "cpu"
        assert container["image"].endswith(":cpu")
        env = env_dict(container)
        threads, lanes, workers = int(env["TORCH_THREADS"]), int(env["CPU_LANES"]), int(env["WORKERS"])
        assert workers + lanes * threads <= int(limits["cpu"]), "workers + lanes' threads fit the CPUs"
    assert "memory" in limits and "cpu" in container["resources"]["requests"]
    workers = env_dict(container).get("WORKERS", "auto")
    assert workers != "auto", "auto counts the node's cores, not the pod's: set WORKERS"
    assert int(workers) <= float(container["resources"]["requests"]["cpu"])


# --- Service, HPA, PDB, ServiceMonitor, alerts, adapter ---------------------------------------------


def test_service_and_monitors_select_the_pods(overlay, serves_get):
    _, docs = overlay
    pod_labels = docs["Deployment"]["spec"]["template"]["metadata"]["labels"]
    service = docs["Service"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    ports = {p["name"]: p for p in service["spec"]["ports"]}
    container_ports = {p["name"] for p in pod_spec(docs["Deployment"])["containers"][0]["ports"]}
    assert {p["targetPort"] for p in ports.values()} == container_ports
    assert ports["grpc"].get("appProtocol") == "kubernetes.io/h2c", "gRPC is HTTP/2 in the clear"
    port = ports["http"]
    assert docs["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    monitor = docs["ServiceMonitor"]
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == port["name"] and serves_get(endpoint["path"])


def test_alerts_are_well_formed_and_read_the_apps_metrics(overlay, exported_series):
    """Every rule is an alert with a parseable expression over series the app exports, on the job the
    ServiceMonitor's scrape gives them (the Service's name), with a severity and a summary."""
    promql = pytest.importorskip("promql_parser", reason="pip install promql-parser (dev extra)")
    _, docs = overlay
    rule = docs["PrometheusRule"]
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    alerts = [r for group in rule["spec"]["groups"] for r in group["rules"]]
    assert len({a["alert"] for a in alerts}) == len(alerts) >= 5
    job = docs["Service"]["metadata"]["name"]
    for alert in alerts:
        promql.parse(alert["expr"])
        assert f'job="{job}"' in alert["expr"], alert["alert"]
        assert metric_names(alert["expr"]) <= exported_series, alert["alert"]
        assert alert["labels"]["severity"] in {"critical", "warning"} and alert["annotations"]["summary"]
        assert alert["for"].endswith("m")


def test_the_backlog_alert_fires_before_the_queue_refuses(overlay, app_env):
    """VitDigitsBacklog's threshold is 80% of MAX_QUEUE_SIZE as the pod runs it."""
    _, docs = overlay
    (alert,) = [
        r
        for g in docs["PrometheusRule"]["spec"]["groups"]
        for r in g["rules"]
        if r["alert"] == "VitDigitsBacklog"
    ]
    env = env_dict(pod_spec(docs["Deployment"])["containers"][0])
    queue = int(env.get("MAX_QUEUE_SIZE", app_env["MAX_QUEUE_SIZE"]))
    threshold = float(alert["expr"].rsplit(">", 1)[1])
    assert threshold == int(0.8 * queue)


def test_the_dashboard_reads_the_apps_metrics(exported_series):
    promql = pytest.importorskip("promql_parser", reason="pip install promql-parser (dev extra)")
    dashboard = json.loads(GRAFANA_DASHBOARD.read_text())
    assert dashboard["uid"] == "vit-digits"
    datasources = [v for v in dashboard["templating"]["list"] if v["type"] == "datasource"]
    assert [v["query"] for v in datasources] == ["prometheus"]
    targets = [t for panel in dashboard["panels"] for t in panel["targets"]]
    assert len(dashboard["panels"]) >= 8
    used = set()
    for target in targets:
        expr = target["expr"]
        promql.parse(re.sub(r"\$__\w+", "5m", expr))  # Grafana's range variables, as Grafana fills them in
        used |= metric_names(expr)
    assert used <= exported_series
    assert {"vit_digits_requests_total", "vit_digits_model_request_seconds_bucket"} <= used


def test_pdb_leaves_a_replica_serving(overlay):
    _, docs = overlay
    pdb = docs["PodDisruptionBudget"]["spec"]
    min_replicas = docs["HorizontalPodAutoscaler"]["spec"]["minReplicas"]
    assert pdb.get("maxUnavailable", 0) < min_replicas or pdb.get("minAvailable", 0) >= 1


def test_hpa_scales_on_pending_requests_with_cpu_fallback(overlay):
    _, docs = overlay
    hpa = docs["HorizontalPodAutoscaler"]["spec"]
    target = hpa["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", docs["Deployment"]["metadata"]["name"])
    assert 2 <= hpa["minReplicas"] <= hpa["maxReplicas"]
    pods = [m["pods"] for m in hpa["metrics"] if m["type"] == "Pods"]
    assert [p["metric"]["name"] for p in pods] == [PENDING_METRIC]
    assert pods[0]["target"]["type"] == "AverageValue"
    assert any(m["type"] == "Resource" and m["resource"]["name"] == "cpu" for m in hpa["metrics"])


def metric_names(expr: str) -> set[str]:
    return set(re.findall(r"\bvit_digits_[a-z_]+", expr))


@pytest.fixture(scope="module")
def exported_series() -> set[str]:
    """The series names the app's metrics expose (a counter's ``_total``, a histogram's ``_bucket``,
    ``_sum`` and ``_count``), from the exposition of the registry every process builds."""
    from prometheus_client import generate_latest

    from app.metrics import Metrics

    names = set()
    for line in generate_latest(Metrics().registry).decode().splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            if kind == "counter":
                name = name.removesuffix("_total")  # as this client version writes it, or not
            suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}.get(kind, [""])
            names |= {name + suffix for suffix in suffixes}
    return names


def test_the_pending_metric_is_the_apps(app_env):
    """The metric the HPA reads is one the app exports (name and the `model` label)."""
    source = "\n".join(p.read_text() for p in (REPO / "app").rglob("*.py"))
    short = PENDING_METRIC.removeprefix("vit_digits_")
    assert PENDING_METRIC in source or f'"{short}"' in source, "app/ no longer exports it"
    contract = (REPO / "docs" / "api-contract.md").read_text()
    assert f"`{PENDING_METRIC}{{model}}` (gauge)" in contract


def test_adapter_publishes_the_hpas_metric():
    values = yaml.safe_load(ADAPTER_VALUES.read_text())
    (rule,) = values["rules"]["custom"]
    assert rule["seriesQuery"].startswith(PENDING_METRIC + "{")
    assert rule["name"]["as"] == PENDING_METRIC
    assert set(rule["resources"]["overrides"]) == {"namespace", "pod"}, "per-pod values for a Pods metric"
    assert rule["metricsQuery"].startswith("sum("), "a pod's backlog is the sum over its models"


def test_inference_service_is_kserve_v1beta1():
    doc = yaml.safe_load(INFERENCE_SERVICE.read_text())
    assert (doc["apiVersion"], doc["kind"]) == ("serving.kserve.io/v1beta1", "InferenceService")
    (container,) = doc["spec"]["predictor"]["containers"]
    assert container["name"] == "kserve-container", "KServe's name for the predictor's serving container"
