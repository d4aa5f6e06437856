"""A CA and an ECDSA P-256 serving certificate for the webhook Service, made with ``cryptography``.

Used by ``dra-webhook certs``, ``make run`` and the tests. The apiserver verifies the serving
certificate against the caBundle with ServerName ``<svc>.<ns>.svc``; the CN is ignored, so the
SANs are what matter.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def service_dns_names(service: str, namespace: str) -> list[str]:
    """The names the apiserver and in-cluster clients use for a Service."""
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc",
            f"{service}.{namespace}.svc.cluster.local"]


@dataclass(frozen=True)
class CertPaths:
    ca: Path
    cert: Path
    key: Path

    def ca_bundle(self) -> str:
        """The base64 PEM CA, as a webhook configuration's ``caBundle`` wants it."""
        return base64.b64encode(self.ca.read_bytes()).decode()


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_ca(cn: str = "dra-webhook-ca", days: int = 3650) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder()
            .subject_name(_name(cn)).issuer_name(_name(cn))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return key, cert


def make_serving_cert(ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, dns_names: list[str],
                      ips: list[str] = (), days: int = 365  # type: ignore[assignment]
                      ) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    cert = (x509.CertificateBuilder()
            .subject_name(_name(dns_names[0] if dns_names else "dra-webhook"))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False,
                                         content_commitment=False, data_encipherment=False,
                                         key_agreement=False, key_cert_sign=False, crl_sign=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                  ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    return key, cert


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _write(path: Path, data: bytes, private: bool = False) -> None:
    """Write atomically (rename) so a server reloading the files never sees half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def generate(service: str, namespace: str, out: str | Path, *, days: int = 365, dev: bool = False,
             extra_dns: list[str] = (), reuse_ca: bool = True  # type: ignore[assignment]
             ) -> CertPaths:
    """Write ``ca.crt`` (+ ``ca.key``), ``tls.crt`` and ``tls.key`` under ``out``.

    An existing ``ca.crt``/``ca.key`` pair is reused (so a re-run keeps the caBundle) unless
    ``reuse_ca`` is false. ``dev`` adds ``localhost`` and ``127.0.0.1``.
    """
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    ca_crt, ca_key_path = d / "ca.crt", d / "ca.key"
    if reuse_ca and ca_crt.exists() and ca_key_path.exists():
        ca_cert = x509.load_pem_x509_certificate(ca_crt.read_bytes())
        loaded = serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None)
        assert isinstance(loaded, ec.EllipticCurvePrivateKey)
        ca_key = loaded
    else:
        ca_key, ca_cert = make_ca(days=max(days, 3650))
        _write(ca_key_path, _pem_key(ca_key), private=True)
        _write(ca_crt, _pem_cert(ca_cert))
    names = service_dns_names(service, namespace) + list(extra_dns)
    ips: list[str] = []
    if dev:
        names.append("localhost")
        ips.append("127.0.0.1")
    key, cert = make_serving_cert(ca_key, ca_cert, names, ips, days=days)
    _write(d / "tls.key", _pem_key(key), private=True)
    _write(d / "tls.crt", _pem_cert(cert))
    return CertPaths(ca_crt, d / "tls.crt", d / "tls.key")


def cert_expiry(path: str | Path) -> float:
    """``notAfter`` of the first certificate in a PEM file, as a Unix timestamp."""
    cert = x509.load_pem_x509_certificate(Path(path).read_bytes())
    return cert.not_valid_after_utc.timestamp()
