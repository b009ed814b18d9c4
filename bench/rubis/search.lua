-- wrk script for the search page: requests what tierbench's browser
-- requests when it searches a category again and again (the original
-- client's rule): a category drawn uniformly among the 20, the page taken
-- from the last page's "&page=" links (one of the first two at even odds;
-- 0 when there is none, as after a "Sorry" page). wrk keeps one script
-- state per thread, so the last page is the thread's last response, not
-- the connection's: the same chain of pages, interleaved.
local names = {"Antiques & Art", "Books", "Business, Office & Industrial", "Clothing & Accessories",
  "Coins", "Collectibles", "Computers", "Consumer Electronics", "Dolls & Bears", "Home & Garden",
  "Jewelry & Watches", "Movies & Television", "Music", "Photo", "Pottery & Glass",
  "Sports", "Stamps", "Tickets & Travel", "Toys & Hobbies", "Everything Else"}
local page = 0

local function escape(s)
  return (s:gsub("[^%w%-%._~]", function(c) return string.format("%%%02X", string.byte(c)) end):gsub("%%20", "+"))
end

request = function()
  local c = math.random(1, #names)
  return wrk.format("GET", "/PHP/SearchItemsByCategory.php?category=" .. c .. "&categoryName=" ..
    escape(names[c]) .. "&page=" .. page .. "&nbOfItems=20")
end

response = function(status, headers, body)
  local links = {}
  for p in body:gmatch("&page=(%d+)") do
    links[#links + 1] = tonumber(p)
    if #links == 2 then break end
  end
  if #links == 0 then
    page = 0
  elseif #links == 1 or math.random() < 0.5 then
    page = links[1]
  else
    page = links[2]
  end
end
