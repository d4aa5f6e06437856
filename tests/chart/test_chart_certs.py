"""The three certificate modes: SANs, and the caBundle in both configurations is the signing CA."""

from __future__ import annotations

import base64
import datetime

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from tests.chart.helpers import CI_DIR, SERVICE, Rendered, render, rendered_ci

SANS = {SERVICE, f"{SERVICE}.dra-system", f"{SERVICE}.dra-system.svc",
        f"{SERVICE}.dra-system.svc.cluster.local"}


def _tls_volume_secret(r: Rendered) -> str:
    (vol,) = [v for v in r.one("Deployment")["spec"]["template"]["spec"]["volumes"] if v["name"] == "tls"]
    return vol["secret"]["secretName"]


def _ca_bundles(r: Rendered) -> list[bytes | None]:
    out = []
    for cfg in r.webhook_configs():
        for w in cfg["webhooks"]:
            b = w["clientConfig"].get("caBundle")
            out.append(base64.b64decode(b) if b is not None else None)
    return out


class TestSelfSigned:
    @pytest.fixture
    def r(self, default: Rendered) -> Rendered:
        return default

    def test_serving_secret_is_the_mounted_one(self, r: Rendered):
        secret = r.one("Secret", _tls_volume_secret(r))
        assert secret["type"] == "kubernetes.io/tls"
        assert set(secret["data"]) == {"ca.crt", "tls.crt", "tls.key"}

    def test_serving_cert_sans_are_the_service_dns_names(self, r: Rendered):
        cert = x509.load_pem_x509_certificate(r.secret_data(_tls_volume_secret(r), "tls.crt"))
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert set(san.get_values_for_type(x509.DNSName)) == SANS
        assert not san.get_values_for_type(x509.IPAddress)
        eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert ExtendedKeyUsageOID.SERVER_AUTH in eku
        assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
        assert datetime.timedelta(days=364) <= lifetime <= datetime.timedelta(days=366)

    def test_ca_bundle_in_both_configurations_is_the_ca_that_signed_the_cert(self, r: Rendered):
        secret = _tls_volume_secret(r)
        ca_pem = r.secret_data(secret, "ca.crt")
        bundles = _ca_bundles(r)
        assert len(bundles) == 2 and all(b == ca_pem for b in bundles)
        ca = x509.load_pem_x509_certificate(ca_pem)
        cert = x509.load_pem_x509_certificate(r.secret_data(secret, "tls.crt"))
        cert.verify_directly_issued_by(ca)  # raises if the CA did not sign it
        assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca

    def test_ca_key_is_kept_in_its_own_secret_for_upgrades(self, r: Rendered):
        ca_secret = r.one("Secret", f"{SERVICE}-ca")
        assert ca_secret["type"] == "kubernetes.io/tls"
        assert r.secret_data(f"{SERVICE}-ca", "tls.crt") == r.secret_data(_tls_volume_secret(r), "ca.crt")
        assert b"PRIVATE KEY" in r.secret_data(f"{SERVICE}-ca", "tls.key")

    def test_no_cert_manager_objects(self, r: Rendered):
        assert not r.of_kind("Certificate") and not r.of_kind("Issuer")
        for cfg in r.webhook_configs():
            assert "annotations" not in cfg["metadata"]

    def test_pod_webhooks_get_the_same_ca(self):
        r = render({"webhooks": {"pods": {"enabled": True}}})
        bundles = _ca_bundles(r)
        assert len(bundles) == 4 and set(bundles) == {r.secret_data(f"{SERVICE}-tls", "ca.crt")}

    def test_sans_follow_release_namespace_and_cluster_domain(self):
        r = render({"fullnameOverride": "dw", "clusterDomain": "corp.example"}, namespace="gpu-ops")
        cert = x509.load_pem_x509_certificate(r.secret_data("dw-tls", "tls.crt"))
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert set(san.get_values_for_type(x509.DNSName)) == {
            "dw", "dw.gpu-ops", "dw.gpu-ops.svc", "dw.gpu-ops.svc.corp.example"}
        assert r.one("Service")["metadata"]["name"] == "dw"


class TestCertManager:
    @pytest.fixture
    def r(self) -> Rendered:
        return rendered_ci("cert-manager-values.yaml")

    def test_bootstrap_issuers_and_ca(self, r: Rendered):
        issuers = {i["metadata"]["name"]: i["spec"] for i in r.of_kind("Issuer")}
        assert issuers == {f"{SERVICE}-selfsigned": {"selfSigned": {}},
                           f"{SERVICE}-ca": {"ca": {"secretName": f"{SERVICE}-ca"}}}
        ca = r.one("Certificate", f"{SERVICE}-ca")["spec"]
        assert ca["isCA"] is True and ca["secretName"] == f"{SERVICE}-ca"
        assert ca["issuerRef"]["name"] == f"{SERVICE}-selfsigned"

    def test_serving_certificate_feeds_the_pod_and_injects_the_ca(self, r: Rendered):
        cert = r.one("Certificate", f"{SERVICE}-serving")
        spec = cert["spec"]
        assert set(spec["dnsNames"]) == SANS
        assert spec["secretName"] == _tls_volume_secret(r)
        assert spec["issuerRef"] == {"name": f"{SERVICE}-ca", "kind": "Issuer", "group": "cert-manager.io"}
        assert "server auth" in spec["usages"]
        for cfg in r.webhook_configs():
            assert cfg["metadata"]["annotations"] == {
                "cert-manager.io/inject-ca-from": f"dra-system/{SERVICE}-serving"}
        assert _ca_bundles(r) == [None, None]  # cainjector fills them
        assert not r.of_kind("Secret")

    def test_existing_issuer_is_used_without_bootstrap(self):
        r = rendered_ci("production-values.yaml")
        assert not r.of_kind("Issuer")
        (cert,) = r.of_kind("Certificate")
        assert cert["spec"]["issuerRef"] == {"name": "cluster-ca", "kind": "ClusterIssuer",
                                             "group": "cert-manager.io"}

    def test_service_monitor_verifies_the_serving_cert(self):
        r = rendered_ci("production-values.yaml")
        (ep,) = r.one("ServiceMonitor")["spec"]["endpoints"]
        assert ep["scheme"] == "https" and ep["path"] == "/metrics" and ep["port"] == "https"
        assert ep["tlsConfig"] == {"serverName": f"{SERVICE}.dra-system.svc",
                                   "ca": {"secret": {"name": _tls_volume_secret(r), "key": "ca.crt"}}}
        assert "insecureSkipVerify" not in str(ep)


class TestExistingSecret:
    @pytest.fixture
    def r(self) -> Rendered:
        return rendered_ci("existing-secret-values.yaml")

    def test_user_secret_is_mounted_and_nothing_is_generated(self, r: Rendered):
        assert _tls_volume_secret(r) == "my-webhook-tls"
        assert not r.of_kind("Secret") and not r.of_kind("Certificate")

    def test_ca_bundle_is_the_given_pem(self, r: Rendered):
        text = (CI_DIR / "existing-secret-values.yaml").read_text(encoding="utf-8")
        start = text.index("-----BEGIN CERTIFICATE-----")
        end = text.index("-----END CERTIFICATE-----") + len("-----END CERTIFICATE-----")
        pem = "\n".join(line.strip() for line in text[start:end].splitlines())
        (bundle,) = _ca_bundles(r)  # mutating is disabled in this file
        assert bundle.decode().strip() == pem
        x509.load_pem_x509_certificate(bundle)
