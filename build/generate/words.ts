/**
 * Word lists the generator composes names and text from. Every word is one token of letters
 * (no spaces, hyphens or digits): slugs and usernames rely on that to stay unique by construction.
 */

const split = (text: string): readonly string[] => [...new Set(text.trim().split(/\s+/))]

/** First word of every project name. */
export const adjectives = split(`
  Better Simple Advanced Extra Tiny Epic Ultimate Cozy Dynamic Smart Lazy Rusty Ancient Mystic
  Quantum Arcane Industrial Immersive Vanilla Cursed Enhanced Modern Classic Super Crafty Compact
  Quick Polished Wild Deep Hidden Lost Frozen Nether Ender Sky Ocean Cave Iron Golden Diamond
  Copper Emerald Obsidian Crystal Shadow Storm Blazing Silent Lucky Clever Humble Mighty Brave
  Twilight Sunny Misty Verdant Royal Tidal Ashen Feral Gilded Hollow Infinite
`)

/** Middle word of mod names. */
export const modTopics = split(`
  Redstone Storage Backpacks Furniture Farming Mobs Biomes Structures Tools Armor Weapons Magic
  Spells Runes Pipes Machines Energy Rails Boats Elytra Villagers Trades Enchantments Potions Food
  Cooking Bees Dragons Dungeons Ores Gems Lanterns Torches Chests Doors Bridges Fences Trees Flowers
  Crops Fish Horses Pets Minimap Waypoints Inventory Recipes Tooltips Hud Chat Shaders Lighting
  Particles Sounds Music Weather Seasons Portals Dimensions Quests Bosses Vehicles Trains Elevators
  Ladders Beds Signs Compasses Clocks Banners Paintings Glass Concrete Terracotta Wool Snow Ice Lava
  Sculk Amethyst Mushrooms Zombies Skeletons Creepers Golems Wolves Foxes Axolotls Copperworks
`)

/** Last word of mod names. */
export const modKinds = split(`
  Tweaks Expanded Overhaul Reborn Plus Core Lib Additions Utilities Essentials Remastered Unleashed
  Evolved Integration Compat Fixes Optimizer Refined Delight Galore Mod Addon Extended Revamped
  Framework API Helper Toolkit Enhancements Unbound Redux Continued Lite Suite Engine Mechanics
  Overload Origins Forged Tinkered
`)

/** Middle word of map names. */
export const mapPlaces = split(`
  Temple Island Castle Citadel Village Fortress Labyrinth Tower Mansion Mineshaft Skyblock Oasis
  Canyon Volcano Glacier Jungle Desert Archipelago Kingdom Metropolis City Outpost Arena Colosseum
  Crypt Catacombs Lighthouse Harbor Shipwreck Spire Sanctuary Ruins Observatory Prison Factory
  Asylum Carnival Station Bunker Monastery Palace Cathedral Valley Reef Lagoon Peak Swamp Tundra
`)

/** Last word of map names. */
export const mapKinds = split(`
  Adventure Parkour Escape Survival Challenge Puzzle Quest Odyssey Run Trials Wars Showdown
  Expedition Saga Chronicles Legacy Siege Hunt Heist Maze Speedrun Hideout Builds Realm World Map
`)

/** Middle word of skin names. */
export const skinCharacters = split(`
  Knight Wizard Ninja Pirate Robot Astronaut Samurai Viking Archer Witch Vampire Elf Dwarf Goblin
  Fox Cat Wolf Dragon Alien Cowboy Detective Chef Gamer Hacker Ghost Mage Paladin Rogue Hunter
  Princess King Queen Jester Monk Necromancer Scientist Explorer Miner Farmer Sailor
`)

/** Last word of skin names. */
export const skinKinds = split(`Skin Outfit Look Variant Style Edition Costume Cosplay Avatar Persona Attire Getup`)

/** Lowercase words of usernames. */
export const userFirst = split(`
  quiet swift lazy happy grumpy sleepy brave clever tiny giant silver golden crimson azure emerald
  shadow frost ember storm lunar solar cosmic pixel blocky crafty rusty misty noble rogue wild
  dark bright electric atomic mellow fuzzy sneaky jolly witty zesty
`)
export const userSecond = split(`
  fox wolf owl creeper miner crafter builder panda otter raven falcon tiger bear dragon golem
  slime phantom llama turtle axolotl bee parrot squid dolphin knight wizard ninja pirate robot
  ghost villager piglin blaze enderman strider cat koala badger lynx moose
`)

/** Nouns and verbs for summaries, descriptions and changelogs. */
export const features = split(`
  blocks items recipes mobs biomes structures tools armor sets machines pipes cables spells
  enchantments potions foods crops trees ores decorations furniture gadgets vehicles quests
  dimensions bosses pets sounds textures particles commands keybinds
`)
export const changeVerbs = split(`Fixed Added Improved Updated Reworked Removed Optimised Rebalanced Tweaked Ported`)
export const changeObjects = [
  'a crash when opening the config screen',
  'rendering glitches with shaders enabled',
  'recipe conflicts with other mods',
  'missing translations',
  'server-side desync of inventories',
  'performance of chunk loading',
  'the config file format',
  'compatibility with the latest loader',
  'textures for several blocks',
  'loot tables of generated structures',
  'a memory leak on world unload',
  'advancements and their icons',
] as const
export const locations = [
  'Berlin, Germany', 'Toronto, Canada', 'São Paulo, Brazil', 'Tokyo, Japan', 'Melbourne, Australia',
  'Stockholm, Sweden', 'Austin, Texas', 'Warsaw, Poland', 'Lyon, France', 'Seoul, South Korea',
  'Manchester, UK', 'Kyiv, Ukraine', 'Prague, Czechia', 'Mexico City, Mexico',
] as const
export const memberRoles = ['Developer', 'Contributor', 'Artist', 'Translator', 'Maintainer', 'Tester'] as const
export const libraryNames = split(`gson jankson cloth mixinextras kotlin sqlite netty jna snakeyaml toml caffeine fastutil`)
