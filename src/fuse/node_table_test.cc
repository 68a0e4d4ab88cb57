#include "fuse/node_table.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <set>

namespace nfsx::fuse {
namespace {

client::CacheBudget g_budget(1 << 20);

client::InodePtr MakeInode(uint64_t fileid, uint8_t handle_byte) {
  nfs3::nfs_fh3 fh;
  fh.size = 1;
  fh.data[0] = std::byte{handle_byte};
  nfs3::fattr3 attr;
  attr.fileid = fileid;
  return std::make_shared<client::Inode>(fh, attr, &g_budget);
}

TEST(NodeTable, RootIsOneAndShowsItsFileid) {
  auto root = MakeInode(2, 0);
  NodeTable t(root);
  NodePtr n = t.Get(1);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->ino, root);
  EXPECT_EQ(n->ino_number, 2u);
  t.Forget(1, 100);  // the root is never dropped
  EXPECT_TRUE(t.Get(1));
}

TEST(NodeTable, NodeIdIsTheFileidAndEveryNameSharesIt) {
  NodeTable t(MakeInode(2, 0));
  auto file = MakeInode(1234, 1);
  NodePtr a = t.Ref(file);
  NodePtr b = t.Ref(file);  // a second name of the same file (hard link)
  EXPECT_EQ(a, b);
  EXPECT_EQ(a->nodeid, 1234u);
  EXPECT_EQ(a->ino_number, 1234u);
  EXPECT_EQ(t.PeekIno(file), 1234u);
}

TEST(NodeTable, LookupCountsAreHonoured) {
  NodeTable t(MakeInode(2, 0));
  auto file = MakeInode(77, 1);
  t.Ref(file);
  t.Ref(file);
  t.Ref(file);
  t.Forget(77, 2);
  EXPECT_TRUE(t.Get(77));
  EXPECT_TRUE(t.Find(file.get()));
  t.Forget(77, 1);
  EXPECT_FALSE(t.Get(77));
  EXPECT_FALSE(t.Find(file.get()));
  // Looked up again later: the same number.
  EXPECT_EQ(t.Ref(file)->nodeid, 77u);
}

TEST(NodeTable, CollidingAndReservedFileidsGetSyntheticIds) {
  NodeTable t(MakeInode(2, 0));
  NodePtr one = t.Ref(MakeInode(1, 1));  // FUSE_ROOT_ID
  NodePtr zero = t.Ref(MakeInode(0, 2));
  NodePtr root_id = t.Ref(MakeInode(2, 3));  // the root's own fileid
  NodePtr a = t.Ref(MakeInode(50, 4));
  NodePtr b = t.Ref(MakeInode(50, 5));  // same fileid, another handle (another fs)
  EXPECT_EQ(a->nodeid, 50u);
  std::set<uint64_t> ids{one->nodeid, zero->nodeid, root_id->nodeid, a->nodeid, b->nodeid, 1};
  EXPECT_EQ(ids.size(), 6u);  // all distinct, none is the root's
  EXPECT_EQ(b->ino_number, b->nodeid);
  EXPECT_NE(a->generation, b->generation);
}

TEST(NodeTable, NamesFollowTheKernelsDentries) {
  NodeTable t(MakeInode(2, 0));
  NodePtr dir = t.Ref(MakeInode(10, 1));
  t.NoteName(10, "a", 11);
  t.NoteName(10, "missing", 0);
  t.NoteName(1, "d", 10);
  EXPECT_EQ(t.FindName(10, "a"), 11u);
  EXPECT_EQ(t.FindName(10, "missing"), 0u);
  EXPECT_EQ(t.FindName(10, "nope"), 0u);
  auto names = t.NamesUnder(10);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()),
            (std::set<std::string>{"a", "missing"}));
  t.DropName(10, "a");
  EXPECT_EQ(t.FindName(10, "a"), 0u);
  t.Forget(10, 1);  // the directory goes, and the names cached under it
  EXPECT_TRUE(t.NamesUnder(10).empty());
  EXPECT_EQ(t.FindName(1, "d"), 10u);
}

TEST(NodeTable, NameCacheStartsOverPastItsLimit) {
  NodeTable t(MakeInode(2, 0), /*max_names=*/3);
  t.NoteName(1, "a", 11);
  t.NoteName(1, "b", 12);
  t.NoteName(1, "a", 13);  // replaces, does not count twice
  t.NoteName(1, "c", 14);
  EXPECT_EQ(t.FindName(1, "a"), 13u);
  EXPECT_EQ(t.FindName(1, "c"), 14u);
  t.NoteName(1, "d", 15);  // the fourth: the cache forgets everything else
  EXPECT_EQ(t.FindName(1, "d"), 15u);
  EXPECT_EQ(t.FindName(1, "a"), 0u);
  EXPECT_EQ(t.FindName(1, "b"), 0u);
  EXPECT_EQ(t.FindName(1, "c"), 0u);
}

TEST(NodeTable, CountsOpenFiles) {
  NodeTable t(MakeInode(2, 0));
  NodePtr a = t.Ref(MakeInode(20, 1));
  NodePtr b = t.Ref(MakeInode(21, 2));
  EXPECT_EQ(t.open_files(), 0u);
  t.Opened(*a);
  t.Opened(*a);
  t.Opened(*b);
  EXPECT_EQ(t.open_files(), 3u);
  EXPECT_EQ(a->opens.load(), 2);
  EXPECT_FALSE(t.Closed(*a));
  EXPECT_TRUE(t.Closed(*a));  // its last
  EXPECT_TRUE(t.Closed(*b));
  EXPECT_EQ(t.open_files(), 0u);
}

// What an unlink does when the name cache has forgotten the name: the server's
// answer (an interned inode) leads to the node the kernel holds.
TEST(NodeTable, AForgottenNameStillLeadsToTheNode) {
  NodeTable t(MakeInode(2, 0), /*max_names=*/2);
  auto file = MakeInode(30, 1);
  NodePtr n = t.Ref(file);
  t.NoteName(1, "victim", n->nodeid);
  t.NoteName(1, "x", 31);
  t.NoteName(1, "y", 32);  // the cache starts over
  EXPECT_EQ(t.FindName(1, "victim"), 0u);
  EXPECT_EQ(t.Find(file.get()), n);
  EXPECT_FALSE(t.Find(MakeInode(30, 9).get()));  // another handle: not a node
}

TEST(NodeTable, AnOpenWithNoRemovalAroundDoesNotWait) {
  NodeTable t(MakeInode(2, 0));
  NodePtr n = t.Ref(MakeInode(40, 1));
  { NodeTable::Removal r(t); }  // over before the open begins
  auto w = t.WatchRemovals();
  t.Opened(*n);
  auto raced = t.AwaitRemovals(w);
  ASSERT_TRUE(raced);
  EXPECT_FALSE(*raced);
}

TEST(NodeTable, AnOpenWaitsForARemovalThatMayHaveMissedIt) {
  NodeTable t(MakeInode(2, 0));
  NodePtr n = t.Ref(MakeInode(41, 1));
  auto removal = std::make_unique<NodeTable::Removal>(t);
  EXPECT_EQ(t.open_files(), 0u);  // what the removal saw: it will not hide the file
  auto w = t.WatchRemovals();
  t.Opened(*n);
  auto open = std::async(std::launch::async, [&] { return t.AwaitRemovals(w); });
  EXPECT_EQ(open.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  removal.reset();  // the server answered the REMOVE
  auto raced = open.get();
  ASSERT_TRUE(raced);
  EXPECT_TRUE(*raced);  // the open must check that its file is still there
}

TEST(NodeTable, ARemovalThatEndedDuringTheOpenCounts) {
  NodeTable t(MakeInode(2, 0));
  NodePtr n = t.Ref(MakeInode(43, 1));
  auto removal = std::make_unique<NodeTable::Removal>(t);
  auto w = t.WatchRemovals();  // the removal is running as the open begins...
  removal.reset();             // ...and ends before the open is counted
  t.Opened(*n);
  auto raced = t.AwaitRemovals(w);
  ASSERT_TRUE(raced);
  EXPECT_TRUE(*raced);
}

}  // namespace
}  // namespace nfsx::fuse
