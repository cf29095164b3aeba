"""Certificates for the TLS tests, made at test time with python3-cryptography: a CA, a broker
certificate with SANs localhost and 127.0.0.1, client certificates, and a stranger CA. Keys in
every PEM form the broker accepts: PKCS#8, PKCS#1 (traditional RSA), SEC1 EC, encrypted."""
import datetime
import ipaddress
import pathlib

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(cn, org="ringlog-test"):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn), x509.NameAttribute(NameOID.ORGANIZATION_NAME, org)])


def _key(kind):
    return ec.generate_private_key(ec.SECP256R1()) if kind == "ec" else rsa.generate_private_key(65537, 2048)


class Authority:
    """A CA that signs leaf certificates."""

    def __init__(self, cn="ringlog test CA"):
        self.key = _key("ec")
        now = datetime.datetime.now(datetime.timezone.utc)
        self.cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(_name(cn))
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - datetime.timedelta(minutes=5))
                     .not_valid_after(now + datetime.timedelta(days=2))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .sign(self.key, hashes.SHA256()))

    def pem(self):
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, cn, server=True, key_kind="rsa", valid=(datetime.timedelta(minutes=-5), datetime.timedelta(days=1))):
        """(key, cert) of a leaf: a server one has SANs localhost and 127.0.0.1. `valid`: its
        notBefore and notAfter as offsets from now."""
        key = _key(key_kind)
        now = datetime.datetime.now(datetime.timezone.utc)
        b = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(self.cert.subject)
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now + valid[0])
             .not_valid_after(now + valid[1])
             .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                            critical=False))
        if server:
            b = b.add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        return key, b.sign(self.key, hashes.SHA256())


def key_pem(key, form="pkcs8", password=None):
    fmt = {"pkcs8": serialization.PrivateFormat.PKCS8,
           "pkcs1": serialization.PrivateFormat.TraditionalOpenSSL}[form]
    enc = (serialization.BestAvailableEncryption(password.encode()) if password
           else serialization.NoEncryption())
    return key.private_bytes(serialization.Encoding.PEM, fmt, enc)


def cert_pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM)


class Material:
    """Files under `directory`: ca.pem, broker.pem (key + chain), client-alice.{key,crt}, and a
    stranger CA's client (stranger.{key,crt}) and server (stranger-ca.pem)."""

    def __init__(self, directory):
        self.dir = pathlib.Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.ca = Authority()
        self.stranger_ca = Authority("stranger CA")
        self.ca_file = self.write("ca.pem", self.ca.pem())
        self.stranger_ca_file = self.write("stranger-ca.pem", self.stranger_ca.pem())
        key, cert = self.ca.issue("broker")
        self.broker_pem = self.write("broker.pem", key_pem(key) + cert_pem(cert) + self.ca.pem())
        self.broker_cert = cert
        key, cert = self.ca.issue("alice", server=False)
        self.alice_key = self.write("client-alice.key", key_pem(key))
        self.alice_crt = self.write("client-alice.crt", cert_pem(cert))
        key, cert = self.stranger_ca.issue("mallory", server=False)
        self.stranger_key = self.write("stranger.key", key_pem(key))
        self.stranger_crt = self.write("stranger.crt", cert_pem(cert))

    def write(self, name, data):
        path = self.dir / name
        path.write_bytes(data)
        return str(path)

    def keystore(self, name, cn="broker", form="pkcs8", key_kind="rsa", password=None, ca=None, **issue_args):
        """A broker keystore file (key in `form`, then the chain)."""
        ca = ca or self.ca
        key, cert = ca.issue(cn, key_kind=key_kind, **issue_args)
        return self.write(name, key_pem(key, form, password) + cert_pem(cert) + ca.pem()), cert
