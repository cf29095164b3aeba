#include "ringlog/controller/metadata_entry.h"

#include "ringlog/controller/metadata_image.h"

#include <array>
#include <variant>

#include "ringlog/base/assert.h"

namespace ringlog::controller {

std::string_view record_name(const protocol::metadata_record& record) {
  return std::visit([](const auto& r) { return std::decay_t<decltype(r)>::schema_name; }, record);
}

std::vector<std::byte> encode_metadata_entry(std::span<const protocol::metadata_record> records) {
  RINGLOG_ASSERT(!records.empty() && records.size() <= metadata_entry_records_max, "entry record count in range");
  protocol::writer out;
  out.write_unsigned_varint(static_cast<uint32_t>(records.size()));
  for (const auto& record : records) {
    protocol::writer frame;
    const int16_t version =
        std::visit([](const auto& r) { return std::decay_t<decltype(r)>::highest_supported_version; }, record);
    auto encoded = protocol::encode_metadata_record(frame, record, version);
    RINGLOG_ASSERT(encoded.ok(), "a metadata record built by ringlog encodes at its highest version");
    auto bytes = std::move(frame).take();
    out.write_unsigned_varint(static_cast<uint32_t>(bytes.size()));
    out.write_raw(bytes);
  }
  return std::move(out).take();
}

result<std::vector<protocol::metadata_record>> decode_metadata_entry(std::span<const std::byte> value) {
  protocol::reader in(value);
  auto count = in.read_unsigned_varint();
  if (!count.ok()) return error{errc::invalid_record, "metadata entry: record count: " + count.error().message};
  if (*count == 0 || *count > metadata_entry_records_max) {
    return error{errc::invalid_record, "metadata entry: record count " + std::to_string(*count) + " is outside [1, " +
                                           std::to_string(metadata_entry_records_max) + "]"};
  }
  std::vector<protocol::metadata_record> out;
  for (uint32_t i = 0; i < *count; ++i) {
    const std::string where = "metadata entry: record " + std::to_string(i) + " of " + std::to_string(*count) + ": ";
    auto length = in.read_unsigned_varint();
    if (!length.ok()) return error{errc::invalid_record, where + "length: " + length.error().message};
    auto frame = in.read_raw(*length);
    if (!frame.ok()) return error{errc::invalid_record, where + frame.error().message};
    auto record = protocol::decode_metadata_record(*frame);
    if (!record.ok()) return error{errc::invalid_record, where + record.error().message};
    out.push_back(std::move(record->record));
  }
  if (in.remaining() != 0) {
    return error{errc::invalid_record, "metadata entry: " + std::to_string(in.remaining()) + " bytes after the last record"};
  }
  return out;
}

namespace {

std::string ids(const std::vector<int32_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out + "]";
}

std::string optional_ids(const std::optional<std::vector<int32_t>>& v) { return v ? ids(*v) : "unchanged"; }

/// Kafka's ScramMechanism names by type number.
std::string scram_mechanism_text(int8_t m) {
  return m == 1 ? "SCRAM-SHA-256" : m == 2 ? "SCRAM-SHA-512" : "UNKNOWN(" + std::to_string(m) + ")";
}

std::string tri_state(int8_t v) { return v == 1 ? "true" : v == 2 ? "false" : "unchanged"; }

}  // namespace

std::string describe_record(const protocol::metadata_record& record) {
  using namespace protocol;
  std::string out(record_name(record));
  out += "(";
  if (const auto* r = std::get_if<register_broker_record>(&record)) {
    out += "brokerId=" + std::to_string(r->broker_id) + ", incarnationId=" + uuid_to_string(r->incarnation_id) +
           ", brokerEpoch=" + (r->broker_epoch < 0 ? std::string("this record's offset") : std::to_string(r->broker_epoch)) +
           ", endPoints=[";
    for (size_t i = 0; i < r->end_points.size(); ++i) {
      const auto& e = r->end_points[i];
      out += (i ? ", " : "") + e.name + "://" + e.host + ":" + std::to_string(e.port);
    }
    out += "], rack=" + (r->rack && !r->rack->empty() ? *r->rack : std::string("null")) +
           ", fenced=" + (r->fenced ? "true" : "false") +
           ", inControlledShutdown=" + (r->in_controlled_shutdown ? "true" : "false");
  } else if (const auto* t = std::get_if<topic_record>(&record)) {
    out += "name=" + t->name + ", topicId=" + uuid_to_string(t->topic_id);
  } else if (const auto* p = std::get_if<partition_record>(&record)) {
    out += "topicId=" + uuid_to_string(p->topic_id) + ", partitionId=" + std::to_string(p->partition_id) +
           ", replicas=" + ids(p->replicas) + ", isr=" + ids(p->isr) + ", leader=" + std::to_string(p->leader) +
           ", leaderEpoch=" + std::to_string(p->leader_epoch) + ", partitionEpoch=" + std::to_string(p->partition_epoch);
  } else if (const auto* c = std::get_if<partition_change_record>(&record)) {
    out += "topicId=" + uuid_to_string(c->topic_id) + ", partitionId=" + std::to_string(c->partition_id) +
           ", leader=" + (c->leader == -2 ? std::string("unchanged") : std::to_string(c->leader)) +
           ", isr=" + optional_ids(c->isr) + ", replicas=" + optional_ids(c->replicas);
  } else if (const auto* k = std::get_if<config_record>(&record)) {
    out += "resourceType=" + std::string(k->resource_type == config_resource_broker ? "BROKER" : "TOPIC") +
           ", resourceName=" + (k->resource_name.empty() ? std::string("(cluster default)") : k->resource_name) +
           ", name=" + k->name + ", value=" + (k->value ? *k->value : std::string("null (reset)"));
  } else if (const auto* f = std::get_if<fence_broker_record>(&record)) {
    out += "id=" + std::to_string(f->id) + ", epoch=" + std::to_string(f->epoch);
  } else if (const auto* u = std::get_if<unfence_broker_record>(&record)) {
    out += "id=" + std::to_string(u->id) + ", epoch=" + std::to_string(u->epoch);
  } else if (const auto* x = std::get_if<remove_topic_record>(&record)) {
    out += "topicId=" + uuid_to_string(x->topic_id);
  } else if (const auto* l = std::get_if<feature_level_record>(&record)) {
    out += "name=" + l->name + ", featureLevel=" + std::to_string(l->feature_level);
  } else if (const auto* i = std::get_if<producer_ids_record>(&record)) {
    out += "brokerId=" + std::to_string(i->broker_id) + ", brokerEpoch=" + std::to_string(i->broker_epoch) +
           ", nextProducerId=" + std::to_string(i->next_producer_id);
  } else if (const auto* s = std::get_if<user_scram_credential_record>(&record)) {
    // Never the keys: a dump of the metadata log is not a credential store.
    out += "name=" + s->name + ", mechanism=" + scram_mechanism_text(s->mechanism) + ", salt=(" +
           std::to_string(s->salt.size()) + " bytes), storedKey=(redacted), serverKey=(redacted), iterations=" +
           std::to_string(s->iterations) + (s->ringlog_create_only ? ", createOnly=true" : "");
  } else if (const auto* d = std::get_if<remove_user_scram_credential_record>(&record)) {
    out += "name=" + d->name + ", mechanism=" + scram_mechanism_text(d->mechanism);
  } else if (const auto* d = std::get_if<broker_decommission_record>(&record)) {
    static constexpr std::array<const char*, 3> states = {"cancelled", "decommissioning", "decommissioned"};
    out += "brokerId=" + std::to_string(d->broker_id) + ", state=" +
           (d->state >= 0 && d->state <= 2 ? states[static_cast<size_t>(d->state)] : std::to_string(d->state));
  } else if (const auto* q = std::get_if<client_quota_record>(&record)) {
    out += "entity=[";
    for (size_t i = 0; i < q->entity.size(); ++i) {
      const auto& e = q->entity[i];
      out += (i ? ", " : "") + e.entity_type + "=" + (e.entity_name ? *e.entity_name : std::string("<default>"));
    }
    out += "], key=" + q->key + (q->remove ? std::string(", remove=true") : ", value=" + std::to_string(q->value));
  } else if (const auto* g = std::get_if<broker_registration_change_record>(&record)) {
    out += "brokerId=" + std::to_string(g->broker_id) + ", brokerEpoch=" + std::to_string(g->broker_epoch) +
           ", fenced=" + tri_state(g->fenced) + ", inControlledShutdown=" + tri_state(g->in_controlled_shutdown);
  }
  return out + ")";
}

}  // namespace ringlog::controller
