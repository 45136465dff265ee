// DocRelation names, as written in the probes' CSV column `relation`.
#include "probes/probe.hpp"

#include <array>
#include <utility>

namespace rigel {
namespace {

constexpr std::array<std::pair<DocRelation, std::string_view>, 4> kRelationNames{{
    {DocRelation::confirms, "confirms"},
    {DocRelation::fills_in, "fills_in"},
    {DocRelation::contradicts, "contradicts"},
    {DocRelation::not_available, "not_available"},
}};

}  // namespace

std::string_view name(DocRelation r) {
    for (const auto& [rel, text] : kRelationNames)
        if (rel == r) return text;
    return "unknown";
}

std::optional<DocRelation> parse_doc_relation(std::string_view s) {
    for (const auto& [rel, text] : kRelationNames)
        if (text == s) return rel;
    return std::nullopt;
}

}  // namespace rigel
