"""Certificates of the rig, made with `cryptography`: one CA signs everything.

The apiserver's serving certificate (127.0.0.1, localhost, kubernetes.default.svc), client
certificates (the admin is in `system:masters`; the scheduler and the controller manager are the
users `system:kube-scheduler` and `system:kube-controller-manager`, so the apiserver's bootstrap
RBAC applies to them as in a real cluster), and the service-account signing key pair.
The webhook's own serving certificate comes from `dra-webhook certs --dev`, as a user makes it.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from webhook.certs import make_ca

APISERVER_NAMES = ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                   "kubernetes.default.svc.cluster.local"]


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _leaf(ca_key: ec.EllipticCurvePrivateKey, ca: x509.Certificate, subject: x509.Name, *,
          dns: list[str] = (), ips: list[str] = (), client: bool  # type: ignore[assignment]
          ) -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    b = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca.subject)
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=30))
         .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
         .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH if client
                                               else ExtendedKeyUsageOID.SERVER_AUTH]), critical=False))
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns]
    sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    if sans:
        b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = b.sign(ca_key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


@dataclass(frozen=True)
class Pki:
    """Paths of the rig's certificates under one directory."""

    dir: Path

    @property
    def ca(self) -> Path:
        return self.dir / "ca.crt"

    def cert(self, name: str) -> Path:
        return self.dir / f"{name}.crt"

    def key(self, name: str) -> Path:
        return self.dir / f"{name}.key"

    @property
    def sa_key(self) -> Path:
        return self.dir / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.dir / "sa.pub"


#: Client certificates besides the admin's: file name -> user (the certificate's common name).
COMPONENT_USERS = {"kube-scheduler": "system:kube-scheduler",
                   "kube-controller-manager": "system:kube-controller-manager"}


def make_pki(out: Path) -> Pki:
    """Write the CA, `apiserver` serving pair, client pairs (`admin` and the control-plane
    components of COMPONENT_USERS) and the service-account keys."""
    out.mkdir(parents=True, exist_ok=True)
    pki = Pki(out)
    ca_key, ca = make_ca("dra-webhook-rig-ca", days=30)
    pki.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (out / "ca.key").write_bytes(_pem_key(ca_key))
    crt, key = _leaf(ca_key, ca, x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]),
                     dns=APISERVER_NAMES, ips=["127.0.0.1", "10.96.0.1"], client=False)
    pki.cert("apiserver").write_bytes(crt)
    pki.key("apiserver").write_bytes(key)
    admin = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters"),
                       x509.NameAttribute(NameOID.COMMON_NAME, "rig-admin")])
    crt, key = _leaf(ca_key, ca, admin, client=True)
    pki.cert("admin").write_bytes(crt)
    pki.key("admin").write_bytes(key)
    for name, user in COMPONENT_USERS.items():
        crt, key = _leaf(ca_key, ca, x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, user)]), client=True)
        pki.cert(name).write_bytes(crt)
        pki.key(name).write_bytes(key)
    sa = ec.generate_private_key(ec.SECP256R1())
    pki.sa_key.write_bytes(_pem_key(sa))
    pki.sa_pub.write_bytes(sa.public_key().public_bytes(serialization.Encoding.PEM,
                                                        serialization.PublicFormat.SubjectPublicKeyInfo))
    return pki
